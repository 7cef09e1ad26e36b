"""Concurrency: reader threads and processes search while a writer syncs a stream of edits.

The writer runs a fixed number of edit rounds (every third one a forced full reindex, so
readers see generations switch under them). Readers must meet zero errors and never an empty
result while memory files exist, and the final index must equal a fresh index of the final
files.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from memwell_sqlite.index_files import PublishedIndex
from memwell_sqlite.manager import SqliteMemoryManager
from reliability_helpers import (
    COUNTS,
    HERE,
    WORDS,
    LineReader,
    build_manager,
    corpus_path,
    disk_files,
    file_text,
    make_corpus,
    make_registry,
    make_settings,
    snapshot_workspace,
    write_files,
)

SEED = 4242
FILES = 60
ROUNDS = 30
READER_PROCESSES = 2


def reader_thread(
    manager: SqliteMemoryManager, stop: threading.Event, seed: int, out: dict[str, object]
) -> None:
    rng = random.Random(seed)
    searches = 0
    errors: list[str] = []
    while not stop.is_set() and searches < 100_000:
        query = " ".join(rng.sample(WORDS, 2))
        try:
            if not manager.search(query, min_score=0.0):
                errors.append(f"no results for {query!r}")
            if searches % 10 == 0:
                manager.status()
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        searches += 1
        time.sleep(0.005)  # leave the writer thread some of the GIL
    out["searches"] = searches
    out["errors"] = errors[:20]


def test_readers_and_writer(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    workspace = tmp_path / "ws"
    files = make_corpus(FILES, 1, SEED)
    write_files(workspace, files)
    settings, registry = make_settings(), make_registry()
    writer = build_manager(workspace, settings, registry)
    own_reader = build_manager(workspace, settings, registry)
    writer.sync()

    stop_file = tmp_path / "stop"
    procs = []
    for number in range(READER_PROCESSES):
        err = (tmp_path / f"reader-{number}.err").open("wb")
        proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "reader_child.py"),
                str(workspace),
                str(stop_file),
                "120",
                str(SEED + number),
            ],
            stdout=subprocess.PIPE,
            stderr=err,
        )
        procs.append((proc, LineReader(proc), err))
    for _proc, reader, _ in procs:
        assert reader.until(["ready"], 120) is not None, "reader process did not start"

    stop = threading.Event()
    readers = (writer, own_reader, build_manager(workspace, settings, registry))
    outputs: list[dict[str, object]] = [{} for _ in readers]
    threads = [
        threading.Thread(target=reader_thread, args=(m, stop, SEED + 10 + i, outputs[i]))
        for i, m in enumerate(readers)
    ]
    for thread in threads:
        thread.start()
    next_index = FILES
    try:
        for number in range(ROUNDS):
            version = number + 2
            for path in rng.sample(sorted(files), 5):
                index = int("".join(ch for ch in Path(path).stem if ch.isdigit()) or 0)
                files[path] = file_text(index, version, SEED, long=index % 7 == 3)
            gone = rng.choice([p for p in sorted(files) if p != "MEMORY.md"])
            del files[gone]
            (workspace / gone).unlink()
            files[corpus_path(next_index)] = file_text(next_index, version, SEED)
            next_index += 1
            write_files(workspace, files)
            writer.sync(force=number % 3 == 2)
    finally:
        stop.set()
        stop_file.write_text("stop")
        for thread in threads:
            thread.join(timeout=120)
    results = []
    for proc, reader, err in procs:
        line = reader.until(["result"], 120)
        proc.wait(timeout=60)
        err.close()
        assert line is not None, Path(err.name).read_text()
        results.append(json.loads(line.split(" ", 1)[1]))
    results += outputs
    for number, result in enumerate(results):
        assert result["errors"] == [], (number, result["errors"])
        assert isinstance(result["searches"], int) and result["searches"] > 0
        COUNTS["concurrent searches"] += result["searches"]
    for manager in readers:
        assert manager.status().custom["recovered"] == []
    writer.sync()
    for manager in readers:
        manager.close()
    fresh = tmp_path / "fresh"
    for path, text in disk_files(workspace).items():
        (fresh / path).parent.mkdir(parents=True, exist_ok=True)
        (fresh / path).write_text(text, encoding="utf-8")
    assert disk_files(fresh) == files
    rebuilt = build_manager(fresh, settings, registry)
    rebuilt.sync()
    rebuilt.close()
    live, clean = snapshot_workspace(workspace), snapshot_workspace(fresh)
    assert live.chunk_set() == clean.chunk_set()
    assert live == clean
    shutil.rmtree(fresh)


@pytest.mark.parametrize("stage", ["check", "open"])
def test_generation_replaced_while_a_reader_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    """Deterministic versions of the races above: the generation a reader is about to check
    or open is published over and deleted by a writer in between."""
    import memwell_sqlite.index_files as index_files_module

    workspace = tmp_path / "ws"
    write_files(workspace, make_corpus(20, 1, SEED))
    settings, registry = make_settings(), make_registry()
    writer = build_manager(workspace, settings, registry)
    writer.sync()
    reader = build_manager(workspace, settings, registry)
    original_problem = index_files_module.index_problem
    original_open = PublishedIndex.open_store
    armed = [True]

    def switch() -> None:
        if armed[0]:
            armed[0] = False
            write_files(workspace, make_corpus(20, 2, SEED))
            writer.sync(force=True)

    def problem(path: Path) -> str | None:
        if stage == "check":
            switch()
        return original_problem(path)

    def open_store(self: PublishedIndex, path: Path, **kwargs: bool) -> object:
        if stage == "open" and self is reader.files:
            switch()
        return original_open(self, path, **kwargs)

    monkeypatch.setattr(index_files_module, "index_problem", problem)
    monkeypatch.setattr(PublishedIndex, "open_store", open_store)
    assert reader.search("meadow valley", min_score=0.0)
    assert not armed[0]
    assert reader.status().custom["recovered"] == []
    assert reader.generation == 0, "the reader had to rebuild the index itself"
    COUNTS["concurrent searches"] += 1
    reader.close()
    writer.close()
