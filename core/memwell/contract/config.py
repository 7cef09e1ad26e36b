"""Configuration: settings records (msgspec structs) with the reference defaults, and the
layered loader.

Layers, lowest precedence first: built-in defaults, the user config
(``$XDG_CONFIG_HOME/memwell/config.toml``), the workspace's ``memwell.toml`` (or the file given
with ``--config``), ``MEMWELL_*`` environment variables (``__`` separates nested keys, e.g.
``MEMWELL_QUERY__MAX_RESULTS=10``), then explicit overrides. Every layer is validated on its own
so an error names the key and the file it came from.

No ``from __future__ import annotations`` here (see :mod:`memwell.contract.records`).
"""

import functools
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeVar

import msgspec

from memwell.contract.config_validation import validate_config
from memwell.contract.errors import ConfigError
from memwell.contract.records import Record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

DEFAULT_MAX_QUERY_CHARS = 4000
"""Default ``query.max_chars``: about 1,000 tokens, inside every supported model's input."""

MAX_QUERY_CHARS_LIMIT = 32_768
"""Largest allowed ``query.max_chars`` (a qmd query is one argument, and Linux caps one
argument at 128 KiB; 32,768 characters are at most 128 KiB of UTF-8)."""


class PluginLookup(Protocol):
    """What validating plugin sections asks of the plugin registry
    (:class:`~memwell.registry.plugins.PluginRegistry` is one)."""

    def lookup(self, kind: str, name: str) -> Any:
        """The descriptor of ``kind`` named ``name``, or ``None``."""
        ...

    def installed(self, kind: str) -> list[str]:
        """Every usable name of ``kind``."""
        ...


CONFIG_FILENAME = "memwell.toml"
Source = Literal["memory", "sessions"]
ENV_PREFIX = "MEMWELL_"
ENV_SOURCE_PREFIX = "environment variable "
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


class _Strict(Record, forbid_unknown_fields=True):
    """A settings table: unknown keys are an error (see
    :mod:`memwell.contract.config_validation`)."""


class ChunkingSettings(_Strict):
    tokens: Annotated[int, msgspec.Meta(ge=1)] = 400
    overlap: Annotated[int, msgspec.Meta(ge=0)] = 80

    def __post_init__(self) -> None:
        self.overlap = min(self.overlap, self.tokens - 1)


class MmrSettings(_Strict):
    # On, at 0.85 (the reference: off, 0.7): the six hits an agent gets repeat one session or
    # note less, on every development set within noise (docs/quality.md, issue 43); lazy and
    # pruned, it costs about 1.5 ms of a warm search (bench/bench_warm_search.py).
    enabled: bool = True
    lambda_: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = msgspec.field(
        default=0.85, name="lambda"
    )


class TemporalDecaySettings(_Strict):
    enabled: bool = False
    half_life_days: Annotated[float, msgspec.Meta(gt=0)] = 30.0


class HybridSettings(_Strict):
    enabled: bool = True
    # The reference's 0.7/0.3: the best weighting on BEIR SciFact (train) with the default
    # local model, nDCG@10 0.737 against 0.731 for 0.5/0.5 (bench/fusion_study.py, README).
    vector_weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.7
    text_weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.3
    candidate_multiplier: Annotated[int, msgspec.Meta(ge=1, le=20)] = 4
    #: Share of a chunk's vector score taken from its whole file's mean vector
    #: (memwell.retrieval.file_similarity; builtin backend); 0 scores chunks alone. Off: it
    #: gains on SciFact (0.740 -> 0.745 at 0.7) but costs LoCoMo turn recall (README, Quality).
    file_weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.0
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: Annotated[int, msgspec.Meta(ge=1)] = 60
    mmr: MmrSettings = msgspec.field(default_factory=MmrSettings)
    temporal_decay: TemporalDecaySettings = msgspec.field(default_factory=TemporalDecaySettings)
    #: Added to hits in a dated note (memory/YYYY-MM-DD*.md) of a date the query names
    #: (memwell.retrieval.date_match); 0 turns date-aware matching off.
    date_boost: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.2
    #: Added to hits that say when (a date, "yesterday", "last week") if the query asks
    #: "when" or "how long"; 0 turns it off.
    when_boost: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.2
    #: Added to hits in the store a query asks for (memwell.retrieval.routing: how-to ->
    #: memory/procedures/, a name -> its entity page, always/never/prefer -> vault and
    #: MEMORY.md); 0 turns routing off.
    route_boost: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.15
    #: Who routes a query: ``keywords`` (memwell.retrieval.routing), or ``textgen``: the
    #: ``[textgen]`` generator names its kinds (memwell.textgen.router), keywords on failure.
    router: Literal["keywords", "textgen"] = "keywords"
    #: Vector weight (text weight: 1 minus it) of a query whose best candidates are
    #: conversation turns, ``Speaker: text`` lines (memwell.retrieval.dialogue); 0 keeps
    #: vector_weight / text_weight for them too.
    dialogue_vector_weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.65
    #: The score floor weighs a hit's keyword score by the share of the question's informative
    #: terms (IDF mass) it holds, to this power (memwell.retrieval.coverage; the ranking is
    #: unchanged); 0 weighs keyword scores in full.
    coverage_power: Annotated[float, msgspec.Meta(ge=0.0, le=8.0)] = 2.0


class QuerySettings(_Strict):
    max_results: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 6
    min_score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.35
    max_injected_chars: Annotated[int, msgspec.Meta(ge=100)] = 4000
    hybrid: HybridSettings = msgspec.field(default_factory=HybridSettings)
    #: Longer queries are cut to this many characters (see memwell.retrieval.query_limit).
    max_chars: Annotated[int, msgspec.Meta(ge=16, le=MAX_QUERY_CHARS_LIMIT)] = (
        DEFAULT_MAX_QUERY_CHARS
    )


class FtsSettings(_Strict):
    tokenizer: Literal["unicode61", "trigram"] = "unicode61"


class VectorSettings(_Strict):
    enabled: bool = True
    extension_path: str | None = None


class StoreSettings(_Strict):
    path: str | None = None
    fts: FtsSettings = msgspec.field(default_factory=FtsSettings)
    vector: VectorSettings = msgspec.field(default_factory=VectorSettings)


class SessionDeltaSettings(_Strict):
    delta_bytes: Annotated[int, msgspec.Meta(ge=0)] = 100_000
    delta_messages: Annotated[int, msgspec.Meta(ge=0)] = 50
    post_compaction_force: bool = True


class SyncSettings(_Strict):
    on_session_start: bool = True
    on_search: bool = True
    watch: bool = True
    watch_debounce_ms: Annotated[int, msgspec.Meta(ge=0)] = 1500
    # Beyond a million minutes, timers overflow.
    interval_minutes: Annotated[float, msgspec.Meta(ge=0, le=1_000_000)] = 0.0
    sessions: SessionDeltaSettings = msgspec.field(default_factory=SessionDeltaSettings)


class RecallCacheSettings(_Strict):
    """``[cache.recall]``: the tiered recall cache in front of every backend."""

    enabled: bool = True
    exact_ttl_seconds: Annotated[float, msgspec.Meta(gt=0)] = 3600.0
    semantic: bool = True
    semantic_ttl_seconds: Annotated[float, msgspec.Meta(gt=0)] = 86_400.0
    semantic_threshold: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 0.85
    #: L3, for questions about recent events (memwell.retrieval.date_match.asks_recent): the
    #: answer of a cached recent-events question with cosine >= temporal_threshold, 7 days.
    #: Off by default: at 0.7, "why did Maria join a church recently?" would get the answer
    #: cached for John (LoCoMo dev asks 14 such questions).
    temporal: bool = False
    temporal_ttl_seconds: Annotated[float, msgspec.Meta(gt=0)] = 604_800.0
    temporal_threshold: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 0.7
    max_entries: Annotated[int, msgspec.Meta(ge=1)] = 1000
    max_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 16 * 1024 * 1024
    #: Time-of-day warm-up (memwell.recall.warmup, ``memwell warm --for morning``): at most
    #: warm_queries queries, each asked in that part of the day on warm_min_days days or more.
    warm_queries: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 20
    warm_min_days: Annotated[int, msgspec.Meta(ge=1)] = 2
    #: A new session (session_key) also warms the cache for the current part of the day.
    warm_on_session: bool = False
    #: Log the text of searches that found something (recall sidecar) so warm-up can learn
    #: what each part of the day asks; off by default: queries stay unrecorded.
    query_log: bool = False


class CacheSettings(_Strict):
    enabled: bool = True
    max_entries: Annotated[int, msgspec.Meta(ge=1)] | None = None
    recall: RecallCacheSettings = msgspec.field(default_factory=RecallCacheSettings)


class LocalSettings(_Strict):
    """Time limits for local (in-process) embedding; the reference's 10 and 5 minutes."""

    batch_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 600.0
    query_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 300.0


class BatchSettings(_Strict):
    enabled: bool = False
    wait: bool = True
    concurrency: Annotated[int, msgspec.Meta(ge=1)] = 2
    poll_interval_ms: Annotated[int, msgspec.Meta(ge=1)] = 2000
    timeout_minutes: Annotated[float, msgspec.Meta(gt=0)] = 60.0


class RemoteSettings(_Strict):
    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 120.0
    batch: BatchSettings = msgspec.field(default_factory=BatchSettings)


class TextgenSettings(_Strict):
    """``[textgen]``: which text generator makes slugs and summaries (see memwell.textgen)."""

    provider: str = "none"
    model: str = ""


class RerankSettings(_Strict):
    """``[rerank]``: the optional rerank stage (see memwell.runtime.rerank); off by default."""

    provider: str = "none"
    model: str = ""
    candidates: Annotated[int, msgspec.Meta(ge=1, le=200)] = 20
    #: Share of a reranked hit's score that is the reranker's; the rest is the backend's
    #: (calibrated) score. 1 ranks by the reranker alone.
    weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 1.0


class SessionSaveSettings(_Strict):
    """``[session_save]``: session notes written by ``memwell session save``."""

    messages: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 15


class FlushSettings(_Strict):
    """``[flush]``: the pre-compaction memory flush (reference defaults, spec section 8)."""

    enabled: bool = True
    soft_threshold_tokens: Annotated[int, msgspec.Meta(ge=0)] = 4000
    reserve_tokens_floor: Annotated[int, msgspec.Meta(ge=0)] = 20_000
    force_flush_transcript_bytes: Annotated[int, msgspec.Meta(ge=0)] = 2 * 1024 * 1024
    prompt: str | None = None
    system_prompt: str | None = None


class WriteSettings(_Strict):
    """``[write]``: the memory writer behind ``memwell write``, ``memory_write`` and MCP."""

    enabled: bool = True
    max_bytes: Annotated[int, msgspec.Meta(ge=1, le=16_777_216)] = 65_536
    lock_timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 10.0
    #: A write that restates a fact with a new value: ``auto`` marks the older line
    #: superseded, ``suggest`` only lists it in the result, ``off`` does neither.
    supersede: Literal["auto", "suggest", "off"] = "auto"
    #: Ask the configured text generator ([textgen]) to confirm each automatic supersession.
    supersede_confirm: bool = False


class RecallTrackingSettings(_Strict):
    """``[recall_tracking]``: which hits each search returned, in a sidecar of the index
    directory (:mod:`memwell.curation.tracking`); it feeds ``memwell promote``."""

    enabled: bool = True


class PromotionWeights(_Strict):
    """The promotion score's weights (the reference's; normalised to sum to 1)."""

    frequency: Annotated[float, msgspec.Meta(ge=0.0)] = 0.24
    relevance: Annotated[float, msgspec.Meta(ge=0.0)] = 0.30
    diversity: Annotated[float, msgspec.Meta(ge=0.0)] = 0.15
    recency: Annotated[float, msgspec.Meta(ge=0.0)] = 0.15
    consolidation: Annotated[float, msgspec.Meta(ge=0.0)] = 0.10
    conceptual: Annotated[float, msgspec.Meta(ge=0.0)] = 0.06


class PromotionSettings(_Strict):
    """``[promotion]``: which recalled snippets ``memwell promote`` copies into MEMORY.md.

    A candidate must pass every gate: weighted score, signal count and distinct queries
    (or recall days); ``max_age_days`` (unset: no limit) drops candidates last recalled longer
    ago. Defaults are the reference's (short-term promotion).
    """

    min_score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.75
    min_recall_count: Annotated[int, msgspec.Meta(ge=0)] = 3
    min_unique_queries: Annotated[int, msgspec.Meta(ge=0)] = 2
    recency_half_life_days: Annotated[float, msgspec.Meta(gt=0)] = 14.0
    max_age_days: Annotated[float, msgspec.Meta(ge=0)] | None = None
    weights: PromotionWeights = msgspec.field(default_factory=PromotionWeights)


class ReflectSettings(_Strict):
    """``[reflect]``: the Reflection Engine (memwell.organise.reflection)."""

    #: ``memwell watch`` also runs reflect every this many minutes; 0 (the default): never.
    every_minutes: Annotated[float, msgspec.Meta(ge=0, le=1_000_000)] = 0.0
    #: How reflect finds entity names (memwell.organise.named). ``offline``: capitalised names
    #: and wiki links, no model; ``textgen``: the ``[textgen]`` generator lists each note's
    #: names too, merged with the offline ones.
    extractor: Literal["offline", "textgen"] = "offline"


class MemwellSettings(_Strict):
    """All of memwell's settings. Defaults follow the reference (spec section 2)."""

    enabled: bool = True
    backend: str = "builtin"
    provider: str = "auto"
    model: str = ""
    fallback: str = "none"
    # How long a failed primary is left alone before it is tried again (doubling per failure).
    fallback_retry_minutes: Annotated[float, msgspec.Meta(ge=0)] = 60.0
    sources: list[Source] = msgspec.field(default_factory=lambda: list[Source](["memory"]))
    extra_paths: list[str] = msgspec.field(default_factory=list)
    sessions_dir: str = "sessions"
    citations: Literal["auto", "on", "off"] = "auto"
    index_dir: str = ".memwell"
    # Files kept in the system prompt on every turn (memwell.agent.prompt.core_memory_section).
    core_files: list[str] = msgspec.field(default_factory=lambda: ["MEMORY.md"])
    core_files_max_chars: Annotated[int, msgspec.Meta(ge=200)] = 12_000
    chunking: ChunkingSettings = msgspec.field(default_factory=ChunkingSettings)
    query: QuerySettings = msgspec.field(default_factory=QuerySettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    sync: SyncSettings = msgspec.field(default_factory=SyncSettings)
    cache: CacheSettings = msgspec.field(default_factory=CacheSettings)
    remote: RemoteSettings = msgspec.field(default_factory=RemoteSettings)
    textgen: TextgenSettings = msgspec.field(default_factory=TextgenSettings)
    reflect: ReflectSettings = msgspec.field(default_factory=ReflectSettings)
    rerank: RerankSettings = msgspec.field(default_factory=RerankSettings)
    session_save: SessionSaveSettings = msgspec.field(default_factory=SessionSaveSettings)
    flush: FlushSettings = msgspec.field(default_factory=FlushSettings)
    write: WriteSettings = msgspec.field(default_factory=WriteSettings)
    recall_tracking: RecallTrackingSettings = msgspec.field(default_factory=RecallTrackingSettings)
    promotion: PromotionSettings = msgspec.field(default_factory=PromotionSettings)
    local: LocalSettings = msgspec.field(default_factory=LocalSettings)
    backends: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    providers: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if isinstance(value, dict) and name not in ("backends", "providers"):
                # MemwellSettings(query={...}): a table given as a mapping, as pydantic took it.
                setattr(self, name, _table_types()[name].model_validate(value))
        self.sources = sorted(set(self.sources or ["memory"]))
        self.extra_paths = list(dict.fromkeys(p.strip() for p in self.extra_paths if p.strip()))

    @property
    def keyword_only(self) -> bool:
        """``provider = "none"`` forces keyword-only mode."""
        return self.provider == "none"

    def fingerprint(self) -> str:
        """A stable string identifying these settings (used as a cache key)."""
        return msgspec.json.encode(self, order="sorted").decode()


@functools.cache
def _table_types() -> dict[str, type[Record]]:
    """The settings tables of :class:`MemwellSettings` by field name."""
    return {
        field.name: field.type
        for field in msgspec.structs.fields(MemwellSettings)
        if isinstance(field.type, type) and issubclass(field.type, Record)
    }


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/memwell/config.toml`` (``~/.config`` by default)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memwell" / "config.toml"


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
    """JSON lists and tables are decoded; anything else stays a string for validation to convert,
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
        layers.append((value, f"{ENV_SOURCE_PREFIX}{name}"))
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
    layer: Mapping[str, Any], source: str, registry: PluginLookup | None, from_text: bool
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
                validate_config(
                    spec.config_model,
                    section,
                    source,
                    prefix=f"{table}.{name}.",
                    from_text=from_text,
                )


WORKSPACE_PATH_KEYS = ("index_dir",)
"""Keys naming a directory memwell writes, which a workspace's own file must keep inside it."""


def _check_inside_workspace(data: Mapping[str, Any], workspace: Path, source: str) -> None:
    """A workspace's ``memwell.toml`` may not send memwell's writes outside the workspace.

    The user's config file, ``MEMWELL_*`` variables and flags may (they are the user's own).
    """
    root = os.path.realpath(workspace)
    for key in WORKSPACE_PATH_KEYS:
        value = data.get(key)
        if not isinstance(value, str):
            continue
        target = os.path.realpath(os.path.join(root, value))
        if os.path.isabs(value) or os.path.commonpath([root, target]) != root:
            raise ConfigError(
                f"invalid value for config key {key!r} in {source}: {value!r} is outside the "
                "workspace, and a workspace's memwell.toml may only name a directory inside it "
                f"(set it in {user_config_path()}, MEMWELL_{key.upper()} or a flag instead)",
                key=key,
                source=source,
            )


def load_settings(
    workspace: Path | None = None,
    *,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
    registry: PluginLookup | None = None,
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
    workspace_file: str | None = None
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
        workspace_file = str(path)
    layers.extend(env_layer(os.environ if environ is None else environ))
    if overrides:
        layers.append((dict(overrides), "explicit settings"))

    merged: dict[str, Any] = {}
    for data, source in layers:
        from_text = source.startswith(ENV_SOURCE_PREFIX)
        validate_config(MemwellSettings, data, source, from_text=from_text)
        _check_plugin_sections(data, source, registry, from_text)
        if workspace is not None and source == workspace_file:
            _check_inside_workspace(data, workspace, source)
        merged = deep_merge(merged, data)
    return validate_config(MemwellSettings, merged, "the merged configuration")


_C = TypeVar("_C")


def plugin_config(
    spec_model: type[_C] | None, section: Mapping[str, Any] | None, where: str
) -> _C | None:
    """Validate a plugin's merged section with its own model (``None`` if it has none).

    The model is a msgspec struct or dataclass, or a pydantic model (see
    :func:`memwell.contract.config_validation.validate_config`).
    """
    if spec_model is None:
        return None
    return validate_config(spec_model, dict(section or {}), "the merged configuration", f"{where}.")
