"""Helpers for writing plugins that most plugins never need, one lazy import away.

``memwell.plugin`` is the plugin API; this module adds the helpers that only some plugins use,
each imported on first use so that a plugin importing this stays cheap:

- remote embedding APIs: :class:`RemoteProviderConfig`, :class:`BatchingRemoteProvider` and the
  batch-file helpers (:func:`jsonl`, :func:`parse_openai_batch_line`,
  :func:`collect_batch_vectors`, :class:`BatchError`, :class:`BatchLine`), the error mapping
  (:func:`status_error`, :func:`transport_error`), :func:`merge_headers`,
  :func:`endpoint_create` and the retry policy (:class:`RetryPolicy`);
- remote text generation: :class:`RemoteTextGenerator`, :func:`remote_text_generator_spec`,
  :data:`TEXTGEN_WHAT`;
- SQLite: :data:`sqlite_errors` (result codes and :func:`is_contention`-style classifiers,
  by code, never by message);
- NumPy: :func:`blas_threads`, :func:`single_blas_thread`;
- start-up: :func:`lazy_module`, :func:`lazy_logger` (import a module, or ``logging``, on first
  use).

These follow the plugin API version (:data:`memwell.plugin.PLUGIN_API_VERSION`) like
``memwell.plugin`` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy_import import lazy_exports

if TYPE_CHECKING:
    from . import sqlite_errors
    from .blas import blas_threads, single_blas_thread
    from .lazy_import import lazy_logger, lazy_module
    from .remote import (
        BatchError,
        BatchingRemoteProvider,
        BatchLine,
        RemoteProviderConfig,
        collect_batch_vectors,
        endpoint_create,
        jsonl,
        merge_headers,
        parse_openai_batch_line,
        status_error,
        transport_error,
    )
    from .retry import RetryPolicy
    from .textgen.remote import WHAT as TEXTGEN_WHAT
    from .textgen.remote import RemoteTextGenerator, remote_text_generator_spec

_WHERE = {
    "sqlite_errors": "sqlite_errors:",
    "BatchError": "remote",
    "BatchLine": "remote",
    "BatchingRemoteProvider": "remote",
    "RemoteProviderConfig": "remote",
    "collect_batch_vectors": "remote",
    "endpoint_create": "remote",
    "jsonl": "remote",
    "merge_headers": "remote",
    "parse_openai_batch_line": "remote",
    "status_error": "remote",
    "transport_error": "remote",
    "RetryPolicy": "retry",
    "RemoteTextGenerator": "textgen.remote",
    "remote_text_generator_spec": "textgen.remote",
    "TEXTGEN_WHAT": "textgen.remote:WHAT",
    "blas_threads": "blas",
    "single_blas_thread": "blas",
    "lazy_logger": "lazy_import",
    "lazy_module": "lazy_import",
}


__getattr__ = lazy_exports(__name__, _WHERE)


__all__ = [
    "TEXTGEN_WHAT",
    "BatchError",
    "BatchLine",
    "BatchingRemoteProvider",
    "RemoteProviderConfig",
    "RemoteTextGenerator",
    "RetryPolicy",
    "blas_threads",
    "collect_batch_vectors",
    "endpoint_create",
    "jsonl",
    "lazy_logger",
    "lazy_module",
    "merge_headers",
    "parse_openai_batch_line",
    "remote_text_generator_spec",
    "single_blas_thread",
    "sqlite_errors",
    "status_error",
    "transport_error",
]
