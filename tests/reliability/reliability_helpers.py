"""Shared helpers of the reliability suite (imported by its conftest, its tests and children).

Everything here is deterministic: corpora come from seeded generators, and snapshots of an
index are plain sets and dicts that two indexes can be compared by.
"""

from __future__ import annotations

import hashlib
import os
import random
import select
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import memwell_sqlite.plugin
from memwell.contract.config import MemwellSettings
from memwell.contract.descriptors import BackendContext, EmbeddingProviderSpec
from memwell.contract.hookspecs import hookimpl
from memwell.providers.retry import RetryPolicy
from memwell.providers.runtime import EmbeddingRuntime
from memwell.registry.plugins import PluginRegistry
from memwell.testing import HashEmbeddingProvider, hash_provider_plugin
from memwell_sqlite.driver import connect
from memwell_sqlite.indexer import Indexer
from memwell_sqlite.layout import IndexDir
from memwell_sqlite.manager import SqliteMemoryManager

HERE = Path(__file__).resolve().parent

#: Totals printed at the end of the run (see ``conftest.pytest_terminal_summary``).
COUNTS: Counter[str] = Counter()
SUMMARY_KEYS = (
    "crash trials",
    "kills mid-write",
    "corruptions detected",
    "out-of-space trials",
    "read-only opens",
    "fuzzed queries",
    "configs fuzzed",
    "transcripts fuzzed",
    "paths tried",
    "concurrent searches",
    "secrets checked",
    "faults injected",
    "plugin faults isolated",
    "injections refused",
    "recall blocks checked",
    "payloads checked",
    "redaction families",
    "malformed MCP messages",
    "failures",
)

WORDS = (
    "alpha",
    "bravo",
    "cedar",
    "delta",
    "ember",
    "falcon",
    "garnet",
    "harbor",
    "island",
    "jasper",
    "kettle",
    "lantern",
    "meadow",
    "nectar",
    "orchid",
    "pepper",
    "quartz",
    "raven",
    "saffron",
    "timber",
    "umber",
    "velvet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
    "anchor",
    "basalt",
    "canyon",
    "dune",
    "estuary",
    "fjord",
    "glacier",
    "hollow",
    "inlet",
    "jungle",
    "knoll",
    "lagoon",
    "mesa",
    "nebula",
    "oasis",
    "prairie",
    "quarry",
    "ridge",
    "savanna",
    "tundra",
    "upland",
    "valley",
    "wetland",
    "zenith",
    "copper",
    "silver",
    "cobalt",
    "nickel",
    "bronze",
    "marble",
    "granite",
    "slate",
    "pewter",
    "amber",
    "ivory",
    "onyx",
    "opal",
    "pearl",
    "ruby",
)

BASE_SETTINGS: dict[str, Any] = {
    "provider": "hash",
    "sync": {"watch": False, "on_search": False, "on_session_start": False},
}


def mcp_initialize(message_id: object, client: str) -> dict[str, Any]:
    """An MCP ``initialize`` request from a client called ``client``."""
    return {
        "jsonrpc": "2.0",
        "id": message_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


def make_settings(**overrides: Any) -> MemwellSettings:
    """Test settings: hash provider, no watcher, no background syncs; ``overrides`` merge in."""
    data: dict[str, Any] = {
        k: dict(v) if isinstance(v, dict) else v for k, v in BASE_SETTINGS.items()
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return MemwellSettings.model_validate(data)


def make_registry(
    *plugins: tuple[object, str], provider: HashEmbeddingProvider | None = None
) -> PluginRegistry:
    """The builtin backend, the hash provider (``provider`` if given) and ``plugins``."""
    registry = PluginRegistry(load_entry_points=False)
    registry.register(memwell_sqlite.plugin, "builtin")
    registry.register(hash_provider_plugin(provider), "hash")
    for plugin, name in plugins:
        registry.register(plugin, name)
    return registry


def provider_plugin(
    provider: HashEmbeddingProvider, provider_id: str, transport: str = "local"
) -> SimpleNamespace:
    """A plugin offering ``provider`` under ``provider_id``; ``"remote"`` transport batches
    requests by bytes (many small calls) as the remote providers do."""
    provider.id = provider_id  # type: ignore[misc]
    spec = EmbeddingProviderSpec(
        id=provider_id,
        create=lambda ctx: provider,
        default_model=provider.model,
        transport=transport,  # type: ignore[arg-type]
    )

    @hookimpl
    def memwell_embedding_providers() -> list[EmbeddingProviderSpec]:
        return [spec]

    return SimpleNamespace(memwell_embedding_providers=memwell_embedding_providers)


def no_sleep_retry(sleeps: list[float] | None = None) -> RetryPolicy:
    """The default retry policy whose waits are recorded instead of slept."""
    record = sleeps if sleeps is not None else []
    return RetryPolicy(sleep=record.append, rand=lambda: 0.5)


def build_manager(
    workspace: Path,
    settings: MemwellSettings,
    registry: PluginRegistry,
    *,
    retry: RetryPolicy | None = None,
) -> SqliteMemoryManager:
    """A fresh, uncached builtin manager built through the backend descriptor."""
    runtime = EmbeddingRuntime(settings, registry, workspace, retry=retry)
    ctx = BackendContext(
        workspace=workspace, settings=settings, embeddings=runtime, registry=registry
    )
    manager = registry.backends["builtin"].create(ctx)
    assert isinstance(manager, SqliteMemoryManager)
    return manager


# -- corpora --------------------------------------------------------------------------------


def file_text(index: int, version: int, seed: int, *, long: bool = False) -> str:
    """One memory file: a title, a unique codeword line and seeded filler sentences."""
    rng = random.Random(f"{seed}:{version}:{index}")
    word = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(12))
    lines = [f"# Topic {index}", "", f"Codeword {word} marks this note."]
    for _ in range(rng.randint(4, 10) if not long else rng.randint(50, 70)):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12))) + ".")
    return "\n".join(lines) + "\n"


def corpus_path(index: int) -> str:
    if index == 0:
        return "MEMORY.md"
    if index % 3 == 0:
        return f"memory/area{index % 4}/note-{index:03d}.md"
    return f"memory/note-{index:03d}.md"


def make_corpus(count: int, version: int, seed: int) -> dict[str, str]:
    """``count`` files (every seventh one spans several chunks) at content ``version``."""
    return {corpus_path(i): file_text(i, version, seed, long=i % 7 == 3) for i in range(count)}


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def disk_files(root: Path) -> dict[str, str]:
    """Every memory Markdown file under ``root`` (relative path -> text)."""
    found: dict[str, str] = {}
    for candidate in [root / "MEMORY.md", *sorted((root / "memory").rglob("*.md"))]:
        if candidate.is_file():
            found[candidate.relative_to(root).as_posix()] = candidate.read_text(encoding="utf-8")
    return found


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- index snapshots ------------------------------------------------------------------------

ChunkKey = tuple[str, int, int, str]


@dataclass(frozen=True)
class Snapshot:
    """What an index holds: file hashes and chunk keys, per (source) path."""

    files: dict[str, str]
    chunks: dict[str, frozenset[ChunkKey]]

    def chunk_set(self) -> set[ChunkKey]:
        return {c for chunks in self.chunks.values() for c in chunks}


def index_root(workspace: Path) -> Path:
    return workspace / ".memwell"


def snapshot_file(db: Path) -> Snapshot:
    """Read one index file and check its internal consistency (FTS, vectors, integrity)."""
    conn, _ = connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")
        orphans = conn.execute(
            "SELECT (SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT rowid FROM chunks))"
            " + (SELECT count(*) FROM chunks WHERE rowid NOT IN (SELECT rowid FROM chunks_fts))"
        ).fetchone()[0]
        assert orphans == 0, "FTS rows and chunk rows disagree"
        has_vec = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
        if has_vec:
            missing = conn.execute(
                "SELECT count(*) FROM chunks WHERE embedding IS NOT NULL AND rowid NOT IN "
                "(SELECT rowid FROM chunks_vec)"
            ).fetchone()[0]
            extra = conn.execute(
                "SELECT count(*) FROM chunks_vec WHERE rowid NOT IN (SELECT rowid FROM chunks)"
            ).fetchone()[0]
            assert missing == 0 and extra == 0, "vector rows and chunk rows disagree"
        files = {
            f"{source}:{path}": h
            for path, source, h in conn.execute("SELECT path, source, hash FROM files")
        }
        chunks: dict[str, set[ChunkKey]] = {key: set() for key in files}
        for path, source, start, end, h in conn.execute(
            "SELECT path, source, start_line, end_line, hash FROM chunks"
        ):
            chunks.setdefault(f"{source}:{path}", set()).add((path, start, end, h))
        assert set(chunks) == set(files), "chunks exist for a file the index does not list"
        return Snapshot(files, {k: frozenset(v) for k, v in chunks.items()})
    finally:
        conn.close()


def snapshot_workspace(workspace: Path) -> Snapshot:
    current = IndexDir(index_root(workspace)).current()
    assert current is not None, "no published index"
    return snapshot_file(current)


def expected_snapshot(
    settings: MemwellSettings, registry: PluginRegistry, workspace: Path, files: Mapping[str, str]
) -> Snapshot:
    """The snapshot a fresh index of ``files`` has (chunked by the indexer's own chunker)."""
    runtime = EmbeddingRuntime(settings, registry, workspace)
    indexer = Indexer(None, settings, runtime, workspace)  # type: ignore[arg-type]
    return Snapshot(
        {f"memory:{p}": sha256(t) for p, t in files.items()},
        {
            f"memory:{p}": frozenset(
                (p, c.start_line, c.end_line, c.hash) for c in indexer._chunk(t)
            )
            for p, t in files.items()
        },
    )


def generation_files(workspace: Path) -> list[str]:
    """Names in the index directory other than the pointer and the lock."""
    root = index_root(workspace)
    return sorted(p.name for p in root.iterdir() if p.name not in ("CURRENT", "write.lock"))


# -- child processes ------------------------------------------------------------------------


class LineReader:
    """Line-wise reads of a child's stdout pipe with a deadline (no buffering surprises)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.buffer = b""
        self.lines: list[str] = []
        self.eof = False

    def until(self, stops: Iterable[str], timeout: float) -> str | None:
        """The first new line whose first word is in ``stops``; None on EOF or timeout."""
        words = tuple(stops)
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\n", 1)
                line = raw.decode("utf-8", "replace").strip()
                self.lines.append(line)
                if line.split(" ", 1)[0] in words:
                    return line
            if self.eof or time.monotonic() > deadline:
                return None
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                data = os.read(self.fd, 65536)
                if data:
                    self.buffer += data
                else:
                    self.eof = True
