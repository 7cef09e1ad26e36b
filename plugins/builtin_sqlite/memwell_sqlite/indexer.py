"""Bring an :class:`IndexStore` in line with the Markdown files (and session transcripts)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
from memwell.plugin import (
    CHARS_PER_TOKEN,
    Chunk,
    EmbeddingRuntime,
    MemwellSettings,
    SyncProgress,
    chunk_ids,
    chunk_markdown,
    enforce_input_limit,
    list_session_files,
    parse_session_jsonl,
    read_source_file,
    remap_lines,
    scan_memory_files,
    session_entry_hash,
    sha256_hex,
    stat_source_file,
)
from memwell.plugin_sdk import lazy_logger

from .store import ChunkRow, FileState, IndexStore

if TYPE_CHECKING:
    from memwell.plugin import Vector

log = lazy_logger(__name__)

FTS_ONLY_MODEL = "fts-only"
#: Files written per transaction (and embedded per provider round trip group).
FILES_PER_TXN = 128
#: A group also closes once it holds this many chunks, so progress moves per embedding batch.
CHUNKS_PER_TXN = 64
#: The same bounds without a model: nothing to embed, so groups are only bounded by memory
#: (each commit of a first keyword-only index cost about 15 ms at 64 chunks a group, and
#: leaves one more FTS segment to merge).
FTS_ONLY_CHUNKS_PER_TXN = 2048
FTS_ONLY_FILES_PER_TXN = 1024

#: A sync that wrote at least this many chunks, and at least half of the index, merges the FTS
#: index's segments afterwards (:meth:`IndexStore.merge_keyword_index`) ...
MERGE_MIN_CHUNKS = 256
#: ... and so does any sync that wrote to an index of at most this many chunks. Each segment a
#: sync leaves is one more b-tree every term of every search is looked up in (three one-file
#: edits to 300 Chinese notes left 6: a warm search took 13 % longer), while rewriting a
#: keyword index this small takes tens of milliseconds (14 ms at 900 Chinese chunks). A larger
#: index leaves small syncs to FTS5's own automerge.
SMALL_INDEX_CHUNKS = 4096


class PendingFile(msgspec.Struct):
    """A file whose chunks must be (re)written."""

    path: str
    source: str
    state: FileState
    chunks: list[Chunk]
    changed: bool = True


class SyncStats(msgspec.Struct):
    scanned: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    evicted: int = 0
    errors: list[str] = msgspec.field(default_factory=list)


def sessions_dir(settings: MemwellSettings, workspace: Path) -> Path:
    return (workspace / settings.sessions_dir).resolve()


class Indexer:
    """One sync pass: scan, diff, chunk, embed (through the cache) and write."""

    def __init__(
        self,
        store: IndexStore,
        settings: MemwellSettings,
        runtime: EmbeddingRuntime,
        workspace: Path,
    ) -> None:
        self.store = store
        self.settings = settings
        self.runtime = runtime
        self.workspace = workspace
        self.provider = runtime.provider
        self.model = self.provider.model if self.provider else FTS_ONLY_MODEL
        self.stats = SyncStats()

    def run(
        self,
        *,
        full: bool,
        progress: Callable[[SyncProgress], None] | None = None,
        sources: frozenset[str] | None = None,
    ) -> SyncStats:
        """Index every changed file (all files when ``full``) and drop vanished ones; with
        ``sources``, only files of those sources are looked at."""
        pending: list[PendingFile] = []
        seen: dict[str, set[str]] = {}
        indexed: dict[str, dict[str, FileState]] = {}
        for source in self.settings.sources:
            if sources is not None and source not in sources:
                continue
            known = indexed[source] = self.store.file_states(source)
            present = seen.setdefault(source, set())
            scan = self._scan_memory if source == "memory" else self._scan_sessions
            for item in scan(known, full=full):
                present.add(item.path)
                if item.changed:
                    pending.append(item)
        total = len(pending)
        total_chunks = sum(len(item.chunks) for item in pending)
        done = chunks_done = 0
        if self.provider is not None:
            groups = _groups(pending, CHUNKS_PER_TXN, FILES_PER_TXN)
        else:
            groups = _groups(pending, FTS_ONLY_CHUNKS_PER_TXN, FTS_ONLY_FILES_PER_TXN)
        for group in groups:
            self._write_group(group)
            done += len(group)
            chunks_done += sum(len(item.chunks) for item in group)
            if progress is not None:
                progress(
                    SyncProgress(
                        completed=done,
                        total=total,
                        label="indexing",
                        chunks=chunks_done,
                        total_chunks=total_chunks,
                    )
                )
        self._remove_vanished(seen, indexed, sources)
        if (done or self.stats.removed) and self._worth_merging(chunks_done):
            with self.store.conn:
                self.store.merge_keyword_index()
        max_entries = self.settings.cache.max_entries
        if self.settings.cache.enabled and max_entries:
            self.stats.evicted = self.store.cache_prune(max_entries)
        for problem in self.stats.errors:
            log.warning("memwell: could not read %s", problem)
        if total == 0 and progress is not None:
            progress(SyncProgress(completed=0, total=0, label="up to date"))
        return self.stats

    def _worth_merging(self, chunks_written: int) -> bool:
        """Whether the FTS segments a sync that wrote ``chunks_written`` chunks left should be
        merged into one (see :data:`SMALL_INDEX_CHUNKS`)."""
        total = self.store.chunk_count()
        bulk = chunks_written >= MERGE_MIN_CHUNKS and chunks_written * 2 >= total
        return bulk or total <= SMALL_INDEX_CHUNKS

    # -- scanning ---------------------------------------------------------------------------

    def _scan_memory(self, known: dict[str, FileState], *, full: bool) -> Iterator[PendingFile]:
        problems = self.stats.errors
        for found in scan_memory_files(self.workspace, self.settings.extra_paths, problems):
            self.stats.scanned += 1
            rel = found.path
            old = known.get(rel)
            if (
                not full
                and old is not None
                and old.mtime == found.mtime_ns
                and old.size == found.size
            ):
                self.stats.unchanged += 1
                yield PendingFile(rel, "memory", old, [], changed=False)
                continue
            read = read_source_file(Path(found.abs_path), self.workspace, problems=problems)
            if read is None:
                continue
            entry, text = read
            state = FileState(entry.hash, entry.mtime_ns, entry.size)
            if not full and old is not None and old.hash == entry.hash:
                self.stats.unchanged += 1
                self.store.record_file(rel, "memory", state)
                yield PendingFile(rel, "memory", state, [], changed=False)
                continue
            yield PendingFile(rel, "memory", state, self._chunk(text))

    def _scan_sessions(self, known: dict[str, FileState], *, full: bool) -> Iterator[PendingFile]:
        folder = sessions_dir(self.settings, self.workspace)
        for abs_path in list_session_files(folder):
            self.stats.scanned += 1
            stat = stat_source_file(abs_path, self.workspace, "sessions", folder)
            if stat is None:
                continue
            rel, mtime, size = stat
            old = known.get(rel)
            if not full and old is not None and old.mtime == mtime and old.size == size:
                self.stats.unchanged += 1
                yield PendingFile(rel, "sessions", old, [], changed=False)
                continue
            read = read_source_file(
                abs_path, self.workspace, "sessions", self.stats.errors, sessions_dir=folder
            )
            if read is None:
                continue
            _, raw = read
            parsed = parse_session_jsonl(raw)
            state = FileState(session_entry_hash(parsed), mtime, size)
            if not full and old is not None and old.hash == state.hash:
                self.stats.unchanged += 1
                self.store.record_file(rel, "sessions", state)
                yield PendingFile(rel, "sessions", state, [], changed=False)
                continue
            chunks = remap_lines(self._chunk(parsed.content), parsed.line_map)
            yield PendingFile(rel, "sessions", state, chunks)

    def _chunk(self, text: str) -> list[Chunk]:
        """Line-based chunks that fit the model's window, then a byte cap as a safety net.

        A model with a small window (MiniLM: 256 tokens) gets chunks of at most that many
        tokens, cut at line boundaries by the chunker; cutting oversized chunks by bytes
        alone split sentences in half (a fact's name in one piece, its value in the next).
        """
        cfg = self.settings.chunking
        tokens = cfg.tokens
        if self.provider is not None:
            tokens = max(1, min(tokens, self.runtime.input_limit_bytes() // CHARS_PER_TOKEN))
        chunks = chunk_markdown(text, tokens=tokens, overlap=min(cfg.overlap, tokens - 1))
        if self.provider is not None:
            chunks = enforce_input_limit(chunks, self.runtime.input_limit_bytes())
        return chunks

    # -- writing ----------------------------------------------------------------------------

    def _embed(self, chunks: Sequence[Chunk]) -> dict[str, Vector]:
        provider = self.provider
        if provider is None or not chunks:
            return {}
        key = self.runtime.provider_key()
        use_cache = self.settings.cache.enabled
        hashes = [c.hash for c in chunks]
        vectors = (
            self.store.cache_get(provider.id, provider.model, key, hashes) if use_cache else {}
        )
        self.stats.cached += len(vectors)
        missing: dict[str, str] = {}
        for chunk in chunks:
            if chunk.hash not in vectors and chunk.hash not in missing:
                missing[chunk.hash] = chunk.text
        if missing:
            matrix = self.runtime.embed_documents(list(missing.values()))
            fresh = dict(zip(missing.keys(), matrix, strict=True))
            self.stats.embedded += len(fresh)
            if use_cache:
                self.store.cache_put(provider.id, provider.model, key, fresh)
            vectors.update(fresh)
        return vectors

    def _write_group(self, group: Sequence[PendingFile]) -> None:
        all_chunks = [c for f in group for c in f.chunks]
        vectors = self._embed(all_chunks)
        if vectors:
            dims = next(iter(vectors.values())).size
            self.store.ensure_vec_table(dims)
        with self.store.conn:
            for item in group:
                ids = chunk_ids(item.source, item.path, item.chunks, self.model)
                rows = [
                    ChunkRow(
                        id=cid,
                        start_line=c.start_line,
                        end_line=c.end_line,
                        hash=c.hash,
                        text=c.text,
                        embedding=vectors.get(c.hash),
                    )
                    for cid, c in zip(ids, item.chunks, strict=True)
                ]
                self.store.replace_file(item.path, item.source, item.state, rows, self.model)
                self.stats.indexed += 1
                self.stats.chunks += len(rows)

    def _remove_vanished(
        self,
        seen: dict[str, set[str]],
        indexed: dict[str, dict[str, FileState]],
        scanned: frozenset[str] | None,
    ) -> None:
        """Delete the files of ``indexed`` (read before the scan) that the scan did not see,
        and every file of a source that is no longer configured; with ``scanned``, only in
        those sources."""
        with self.store.conn:
            for source in ("memory", "sessions") if scanned is None else sorted(scanned):
                present = seen.get(source, set())
                known = indexed.get(source)
                for path in known if known is not None else self.store.file_states(source):
                    if path not in present:
                        self.store.delete_file(path, source)
                        self.stats.removed += 1


def _groups(
    pending: Sequence[PendingFile], max_chunks: int, max_files: int
) -> Iterator[list[PendingFile]]:
    """Consecutive groups of at most ``max_files`` files or about ``max_chunks`` chunks (a
    file is never split)."""
    group: list[PendingFile] = []
    chunks = 0
    for item in pending:
        if group and (len(group) >= max_files or chunks + len(item.chunks) > max_chunks):
            yield group
            group, chunks = [], 0
        group.append(item)
        chunks += len(item.chunks)
    if group:
        yield group


def scope_hash(settings: MemwellSettings, workspace: Path) -> str:
    """Hash of what is indexed beyond the defaults (extra paths, sessions dir)."""
    extras = sorted((workspace / p).resolve().as_posix() for p in settings.extra_paths)
    data = repr((extras, sessions_dir(settings, workspace).as_posix()))
    return sha256_hex(data)
