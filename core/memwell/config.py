"""Configuration: pydantic models with the reference defaults, and the layered loader.

Layers, lowest precedence first: built-in defaults, the user config
(``$XDG_CONFIG_HOME/memwell/config.toml``), the workspace's ``memwell.toml`` (or the file given
with ``--config``), ``MEMWELL_*`` environment variables (``__`` separates nested keys, e.g.
``MEMWELL_QUERY__MAX_RESULTS=10``), then explicit overrides. Every layer is validated on its own
so an error names the key and the file it came from.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError
from .retrieval.query_limit import DEFAULT_MAX_QUERY_CHARS, MAX_QUERY_CHARS_LIMIT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

if TYPE_CHECKING:
    from .plugins import PluginRegistry

CONFIG_FILENAME = "memwell.toml"
Source = Literal["memory", "sessions"]
ENV_PREFIX = "MEMWELL_"
#: ``MEMWELL_*`` variables that are not configuration keys.
NON_CONFIG_ENV = frozenset(
    {
        "MEMWELL_LOAD_PLUGINS",
        "MEMWELL_WORKSPACE",
        "MEMWELL_CONFIG",
        "MEMWELL_DEBUG",
        "MEMWELL_QMD_COMMAND",
    }
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class ChunkingSettings(_Strict):
    tokens: int = Field(400, ge=1)
    overlap: int = Field(80, ge=0)

    @model_validator(mode="after")
    def _clamp_overlap(self) -> ChunkingSettings:
        self.overlap = min(self.overlap, self.tokens - 1)
        return self


class MmrSettings(_Strict):
    enabled: bool = False
    lambda_: float = Field(0.7, alias="lambda", ge=0.0, le=1.0)


class TemporalDecaySettings(_Strict):
    enabled: bool = False
    half_life_days: float = Field(30.0, gt=0)


class HybridSettings(_Strict):
    enabled: bool = True
    # The reference's 0.7/0.3: the best weighting on BEIR SciFact (train) with the default
    # local model, nDCG@10 0.737 against 0.731 for 0.5/0.5 (bench/fusion_study.py, README).
    vector_weight: float = Field(0.7, ge=0.0, le=1.0)
    text_weight: float = Field(0.3, ge=0.0, le=1.0)
    candidate_multiplier: int = Field(4, ge=1, le=20)
    #: Share of a chunk's vector score taken from its whole file's mean vector
    #: (memwell.retrieval.file_similarity; builtin backend); 0 scores chunks alone. Off: it
    #: gains on SciFact (0.740 -> 0.745 at 0.7) but costs LoCoMo turn recall (README, Quality).
    file_weight: float = Field(0.0, ge=0.0, le=1.0)
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: int = Field(60, ge=1)
    mmr: MmrSettings = Field(default_factory=MmrSettings)
    temporal_decay: TemporalDecaySettings = Field(default_factory=TemporalDecaySettings)
    #: Added to hits in a dated note (memory/YYYY-MM-DD*.md) of a date the query names
    #: (memwell.retrieval.date_match); 0 turns date-aware matching off.
    date_boost: float = Field(0.2, ge=0.0, le=1.0)
    #: Added to hits that say when (a date, "yesterday", "last week") if the query asks
    #: "when" or "how long"; 0 turns it off.
    when_boost: float = Field(0.2, ge=0.0, le=1.0)
    #: Vector weight (text weight: 1 minus it) of a query whose best candidates are
    #: conversation turns, ``Speaker: text`` lines (memwell.retrieval.dialogue); 0 keeps
    #: vector_weight / text_weight for them too.
    dialogue_vector_weight: float = Field(0.65, ge=0.0, le=1.0)


class QuerySettings(_Strict):
    max_results: int = Field(6, ge=1, le=1000)
    min_score: float = Field(0.35, ge=0.0, le=1.0)
    max_injected_chars: int = Field(4000, ge=100)
    hybrid: HybridSettings = Field(default_factory=HybridSettings)
    #: Longer queries are cut to this many characters (see memwell.retrieval.query_limit).
    max_chars: int = Field(DEFAULT_MAX_QUERY_CHARS, ge=16, le=MAX_QUERY_CHARS_LIMIT)


class FtsSettings(_Strict):
    tokenizer: Literal["unicode61", "trigram"] = "unicode61"


class VectorSettings(_Strict):
    enabled: bool = True
    extension_path: str | None = None


class StoreSettings(_Strict):
    path: str | None = None
    fts: FtsSettings = Field(default_factory=FtsSettings)
    vector: VectorSettings = Field(default_factory=VectorSettings)


class SessionDeltaSettings(_Strict):
    delta_bytes: int = Field(100_000, ge=0)
    delta_messages: int = Field(50, ge=0)
    post_compaction_force: bool = True


class SyncSettings(_Strict):
    on_session_start: bool = True
    on_search: bool = True
    watch: bool = True
    watch_debounce_ms: int = Field(1500, ge=0)
    interval_minutes: float = Field(0, ge=0, le=1_000_000)  # beyond, timers overflow
    sessions: SessionDeltaSettings = Field(default_factory=SessionDeltaSettings)


class RecallCacheSettings(_Strict):
    """``[cache.recall]``: the tiered recall cache in front of every backend."""

    enabled: bool = True
    exact_ttl_seconds: float = Field(3600, gt=0)
    semantic: bool = True
    semantic_ttl_seconds: float = Field(86_400, gt=0)
    semantic_threshold: float = Field(0.85, gt=0.0, le=1.0)
    max_entries: int = Field(1000, ge=1)
    max_bytes: int = Field(16 * 1024 * 1024, ge=1024)


class CacheSettings(_Strict):
    enabled: bool = True
    max_entries: int | None = Field(None, ge=1)
    recall: RecallCacheSettings = Field(default_factory=RecallCacheSettings)


class LocalSettings(_Strict):
    """Time limits for local (in-process) embedding; the reference's 10 and 5 minutes."""

    batch_timeout_seconds: float = Field(600, gt=0)
    query_timeout_seconds: float = Field(300, gt=0)


class BatchSettings(_Strict):
    enabled: bool = False
    wait: bool = True
    concurrency: int = Field(2, ge=1)
    poll_interval_ms: int = Field(2000, ge=1)
    timeout_minutes: float = Field(60, gt=0)


class RemoteSettings(_Strict):
    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(120, gt=0)
    batch: BatchSettings = Field(default_factory=BatchSettings)


class TextgenSettings(_Strict):
    """``[textgen]``: which text generator makes slugs and summaries (see memwell.textgen)."""

    provider: str = "none"
    model: str = ""


class RerankSettings(_Strict):
    """``[rerank]``: the optional rerank stage (see memwell.rerank); off by default."""

    provider: str = "none"
    model: str = ""
    candidates: int = Field(20, ge=1, le=200)


class SessionSaveSettings(_Strict):
    """``[session_save]``: session notes written by ``memwell session save``."""

    messages: int = Field(15, ge=1, le=10_000)


class FlushSettings(_Strict):
    """``[flush]``: the pre-compaction memory flush (reference defaults, spec section 8)."""

    enabled: bool = True
    soft_threshold_tokens: int = Field(4000, ge=0)
    reserve_tokens_floor: int = Field(20_000, ge=0)
    force_flush_transcript_bytes: int = Field(2 * 1024 * 1024, ge=0)
    prompt: str | None = None
    system_prompt: str | None = None


class WriteSettings(_Strict):
    """``[write]``: the memory writer behind ``memwell write``, ``memory_write`` and MCP."""

    enabled: bool = True
    max_bytes: int = Field(65_536, ge=1, le=16_777_216)
    lock_timeout_seconds: float = Field(10.0, gt=0, le=3600)


class RecallTrackingSettings(_Strict):
    """``[recall_tracking]``: which hits each search returned, in a sidecar of the index
    directory (:mod:`memwell.curation.tracking`); it feeds ``memwell promote``."""

    enabled: bool = True


class PromotionWeights(_Strict):
    """The promotion score's weights (the reference's; normalised to sum to 1)."""

    frequency: float = Field(0.24, ge=0.0)
    relevance: float = Field(0.30, ge=0.0)
    diversity: float = Field(0.15, ge=0.0)
    recency: float = Field(0.15, ge=0.0)
    consolidation: float = Field(0.10, ge=0.0)
    conceptual: float = Field(0.06, ge=0.0)


class PromotionSettings(_Strict):
    """``[promotion]``: which recalled snippets ``memwell promote`` copies into MEMORY.md.

    A candidate must pass every gate: weighted score, signal count and distinct queries
    (or recall days); ``max_age_days`` (unset: no limit) drops candidates last recalled longer
    ago. Defaults are the reference's (short-term promotion).
    """

    min_score: float = Field(0.75, ge=0.0, le=1.0)
    min_recall_count: int = Field(3, ge=0)
    min_unique_queries: int = Field(2, ge=0)
    recency_half_life_days: float = Field(14.0, gt=0)
    max_age_days: float | None = Field(None, ge=0)
    weights: PromotionWeights = Field(default_factory=PromotionWeights)


class MemwellSettings(_Strict):
    """All of memwell's settings. Defaults follow the reference (spec section 2)."""

    enabled: bool = True
    backend: str = "builtin"
    provider: str = "auto"
    model: str = ""
    fallback: str = "none"
    # How long a failed primary is left alone before it is tried again (doubling per failure).
    fallback_retry_minutes: float = Field(60, ge=0)
    sources: list[Source] = Field(default_factory=lambda: list[Source](["memory"]))
    extra_paths: list[str] = Field(default_factory=list)
    sessions_dir: str = "sessions"
    citations: Literal["auto", "on", "off"] = "auto"
    index_dir: str = ".memwell"
    # Files kept in the system prompt on every turn (memwell.prompt.core_memory_section).
    core_files: list[str] = Field(default_factory=lambda: ["MEMORY.md"])
    core_files_max_chars: int = Field(12_000, ge=200)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    query: QuerySettings = Field(default_factory=QuerySettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    sync: SyncSettings = Field(default_factory=SyncSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    remote: RemoteSettings = Field(default_factory=RemoteSettings)
    textgen: TextgenSettings = Field(default_factory=TextgenSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    session_save: SessionSaveSettings = Field(default_factory=SessionSaveSettings)
    flush: FlushSettings = Field(default_factory=FlushSettings)
    write: WriteSettings = Field(default_factory=WriteSettings)
    recall_tracking: RecallTrackingSettings = Field(default_factory=RecallTrackingSettings)
    promotion: PromotionSettings = Field(default_factory=PromotionSettings)
    local: LocalSettings = Field(default_factory=LocalSettings)
    backends: dict[str, dict[str, Any]] = Field(default_factory=dict)
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _normalise(self) -> MemwellSettings:
        if not self.sources:
            self.sources = ["memory"]
        self.sources = sorted(set(self.sources))
        self.extra_paths = list(dict.fromkeys(p.strip() for p in self.extra_paths if p.strip()))
        return self

    @property
    def keyword_only(self) -> bool:
        """``provider = "none"`` forces keyword-only mode."""
        return self.provider == "none"

    def fingerprint(self) -> str:
        """A stable string identifying these settings (used as a cache key)."""
        return json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/memwell/config.toml`` (``~/.config`` by default)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memwell" / "config.toml"


def _format_loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)


def _raise_validation(exc: ValidationError, source: str, prefix: str = "") -> None:
    err = exc.errors()[0]
    key = prefix + _format_loc(err["loc"])
    if err["type"] == "extra_forbidden":
        message = f"unknown config key {key!r} in {source}"
    else:
        message = f"invalid value for config key {key!r} in {source}: {err['msg']}"
    more = len(exc.errors()) - 1
    if more:
        message += f" (and {more} more error{'s' if more > 1 else ''})"
    raise ConfigError(message, key=key, source=source) from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", source=str(path)) from None
    except RecursionError:
        message = f"{path} is not valid TOML: nested too deeply"
        raise ConfigError(message, source=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}", source=str(path)) from None


def _parse_env_value(raw: str) -> Any:
    """JSON lists and tables are decoded; anything else stays a string for pydantic to convert,
    so a numeric-looking model name, API key or header value is not turned into a number."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    return value if isinstance(value, (list, dict)) else raw


def env_layer(environ: Mapping[str, str]) -> list[tuple[dict[str, Any], str]]:
    """One layer per ``MEMWELL_*`` variable, so an error names the variable."""
    layers: list[tuple[dict[str, Any], str]] = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in NON_CONFIG_ENV:
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        value: Any = _parse_env_value(environ[name])
        for part in reversed(parts):
            value = {part: value}
        layers.append((value, f"environment variable {name}"))
    return layers


def deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``top`` into a copy of ``base``; nested tables merge, other values replace."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _check_plugin_sections(
    layer: Mapping[str, Any], source: str, registry: PluginRegistry | None
) -> None:
    if registry is None:
        return
    # A [providers.<id>] section configures the plugin's embedding provider and its text
    # generator alike; each validates it with its own model.
    tables = (
        ("backends", ["backend"]),
        ("providers", ["provider", "text generator", "reranker"]),
    )
    for table, kinds in tables:
        sections = layer.get(table) or {}
        for name, section in sections.items():
            found = [registry.lookup(kind, name) for kind in kinds]
            specs = [spec for spec in found if spec is not None]
            if not specs:
                installed = ", ".join(sorted({n for k in kinds for n in registry.installed(k)}))
                raise ConfigError(
                    f"unknown config key '{table}.{name}' in {source}: no such plugin "
                    f"(installed: {installed or 'none'})",
                    key=f"{table}.{name}",
                    source=source,
                )
            for spec in specs:
                if spec.config_model is None:
                    continue
                try:
                    spec.config_model.model_validate(section)
                except ValidationError as exc:
                    _raise_validation(exc, source, prefix=f"{table}.{name}.")


def load_settings(
    workspace: Path | None = None,
    *,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
    registry: PluginRegistry | None = None,
) -> MemwellSettings:
    """Load and validate the layered configuration.

    :param workspace: where ``memwell.toml`` is looked for.
    :param config_file: use this file instead of the workspace's ``memwell.toml``; it must exist.
    :param overrides: explicit values (CLI flags, API arguments), highest precedence.
    :param environ: the environment to read ``MEMWELL_*`` from (default ``os.environ``).
    :param user_config: the user config path (default :func:`user_config_path`).
    :param registry: when given, plugin sections are validated by each plugin's model.
    :raises ConfigError: naming the key and the file of the first problem.
    """
    layers: list[tuple[dict[str, Any], str]] = []
    user = user_config or user_config_path()
    if user.is_file():
        layers.append((_read_toml(user), str(user)))
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"config file {config_file} does not exist", source=str(config_file))
        layers.append((_read_toml(config_file), str(config_file)))
    elif workspace is not None and (workspace / CONFIG_FILENAME).is_file():
        path = workspace / CONFIG_FILENAME
        layers.append((_read_toml(path), str(path)))
    layers.extend(env_layer(os.environ if environ is None else environ))
    if overrides:
        layers.append((dict(overrides), "explicit settings"))

    merged: dict[str, Any] = {}
    for data, source in layers:
        try:
            MemwellSettings.model_validate(data)
        except ValidationError as exc:
            _raise_validation(exc, source)
        _check_plugin_sections(data, source, registry)
        merged = deep_merge(merged, data)
    try:
        return MemwellSettings.model_validate(merged)
    except ValidationError as exc:  # pragma: no cover - each layer was valid on its own
        _raise_validation(exc, "the merged configuration")
        raise


def plugin_config(
    spec_model: type[BaseModel] | None, section: Mapping[str, Any] | None, where: str
) -> BaseModel | None:
    """Validate a plugin's merged section with its own model (``None`` if it has none)."""
    if spec_model is None:
        return None
    try:
        return spec_model.model_validate(dict(section or {}))
    except ValidationError as exc:
        _raise_validation(exc, "the merged configuration", prefix=f"{where}.")
        raise
