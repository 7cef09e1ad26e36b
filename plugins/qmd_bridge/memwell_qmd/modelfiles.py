"""Which GGUF models a qmd command needs, and whether they are usable without a download.

With its default ``hf:`` models and no network, qmd's model downloader retries for many
minutes instead of failing, so the bridge checks before it runs a model-backed command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROLES = ("embed", "generate", "rerank")

DEFAULT_MODELS: Mapping[str, str] = {
    "embed": "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf",
    "generate": "hf:tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf",
    "rerank": "hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf",
}
"""qmd 2.8.3's built-in model URIs."""

MODE_MODELS: Mapping[str, tuple[str, ...]] = {
    "search": (),
    "vsearch": ("embed", "generate"),  # qmd 2.8 vsearch also expands the query
    "query": ("embed", "generate", "rerank"),
    "embed": ("embed",),
}
"""The model roles each command needs."""

ENV_VARS: Mapping[str, str] = {
    "embed": "QMD_EMBED_MODEL",
    "generate": "QMD_GENERATE_MODEL",
    "rerank": "QMD_RERANK_MODEL",
}


def is_remote(uri: str) -> bool:
    return uri.startswith("hf:") or "://" in uri


def resolve_model(uri: str, workspace: Path) -> str:
    """A remote URI unchanged; a local path made absolute (``~`` and workspace-relative)."""
    if is_remote(uri):
        return uri
    return os.path.normpath(os.path.join(workspace, os.path.expanduser(uri)))


def model_problem(uri: str, models_dir: Path, allow_downloads: bool) -> str | None:
    """Why ``uri`` cannot be used offline now, or ``None`` if it can.

    A local path must be an existing file. An ``hf:user/repo/file.gguf`` model counts as
    present when a cached file in ``models_dir`` ends with its file name (node-llama-cpp names
    them ``hf_<user>_<file>``). Anything else needs ``allow_downloads``.
    """
    if not is_remote(uri):
        return None if os.path.isfile(uri) else f"model file {uri} does not exist"
    if allow_downloads:
        return None
    filename = uri.rsplit("/", 1)[-1]
    if uri.startswith("hf:") and filename.endswith(".gguf"):
        try:
            cached = [entry.name for entry in os.scandir(models_dir)]
        except OSError:
            cached = []
        if any(name.endswith(filename) for name in cached):
            return None
    return f"model {uri} is not downloaded and allow_model_downloads is off"


def missing_models(
    command: str, models: Mapping[str, str], models_dir: Path, allow_downloads: bool
) -> dict[str, str]:
    """``{role: problem}`` for every model ``command`` needs that is unusable."""
    problems: dict[str, str] = {}
    for role in MODE_MODELS[command]:
        problem = model_problem(models[role], models_dir, allow_downloads)
        if problem is not None:
            problems[role] = problem
    return problems
