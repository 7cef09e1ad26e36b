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

from memwell.util.lazy_import import lazy_exports

if TYPE_CHECKING:
    from memwell.providers.remote import (
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
    from memwell.providers.retry import RetryPolicy
    from memwell.textgen.remote import WHAT as TEXTGEN_WHAT
    from memwell.textgen.remote import RemoteTextGenerator, remote_text_generator_spec
    from memwell.util import sqlite_errors
    from memwell.util.blas import blas_threads, single_blas_thread
    from memwell.util.lazy_import import lazy_logger, lazy_module

_WHERE = {
    "sqlite_errors": "util.sqlite_errors:",
    "BatchError": "providers.remote",
    "BatchLine": "providers.remote",
    "BatchingRemoteProvider": "providers.remote",
    "RemoteProviderConfig": "providers.remote",
    "collect_batch_vectors": "providers.remote",
    "endpoint_create": "providers.remote",
    "jsonl": "providers.remote",
    "merge_headers": "providers.remote",
    "parse_openai_batch_line": "providers.remote",
    "status_error": "providers.remote",
    "transport_error": "providers.remote",
    "RetryPolicy": "providers.retry",
    "RemoteTextGenerator": "textgen.remote",
    "remote_text_generator_spec": "textgen.remote",
    "TEXTGEN_WHAT": "textgen.remote:WHAT",
    "blas_threads": "util.blas",
    "single_blas_thread": "util.blas",
    "lazy_logger": "util.lazy_import",
    "lazy_module": "util.lazy_import",
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
