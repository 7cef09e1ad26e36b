"""The builtin backend embeds each chunk led by its file's title; the rule is index identity."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import memwell_sqlite.manager
import pytest
from memwell.manager import MemorySearchManager
from memwell.recall.manager import unwrap
from memwell.retrieval.embedding_text import EMBEDDING_TEXT_VERSION
from memwell.testing import HashEmbeddingProvider

OpenFn = Callable[..., MemorySearchManager]
TITLE = "# Zanzibar launch plan"
BODY = "\n".join(f"Step {i}: check the staging rollout gate number {i}." for i in range(80))


def record(provider: HashEmbeddingProvider) -> list[str]:
    seen: list[str] = []

    def keep(texts: Sequence[str]) -> None:
        seen.extend(texts)

    provider.fail = keep
    return seen


def test_later_chunks_are_embedded_with_the_title_and_stored_verbatim(
    open_ws: OpenFn, tmp_path: Path, provider: HashEmbeddingProvider
) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    note = ws / "memory" / "plan.md"
    note.write_text(f"{TITLE}\n\n{BODY}\n", encoding="utf-8")
    seen = record(provider)
    memory = open_ws(ws, chunking={"tokens": 64, "overlap": 8})
    memory.sync()
    documents = [t for t in seen if "Step" in t]
    assert len(documents) > 2, "the note is cut into several chunks"
    assert all(t.startswith(TITLE) for t in documents), documents
    hits = memory.search("staging rollout gate number 70", min_score=0.0, max_results=20)
    later = [h for h in hits if h.start_line > 1]
    assert later, "a later chunk is found"
    lines = note.read_text(encoding="utf-8").splitlines()
    for hit in later:
        assert TITLE not in hit.snippet, "the title is embedded, never stored in the chunk"
        assert hit.snippet.splitlines()[0].strip() in lines[hit.start_line - 1]


def test_a_new_embedding_text_rule_rebuilds_the_index(
    open_ws: OpenFn,
    workspace: Path,
    provider: HashEmbeddingProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = open_ws(workspace)
    first.sync()
    first.search("warm up the reader", min_score=0.0)
    meta = unwrap(first).files.reader_meta  # type: ignore[union-attr]
    assert meta is not None and meta["embedding_text"] == EMBEDDING_TEXT_VERSION
    before = first.status().custom["generation_file"]
    first.close()
    again = open_ws(workspace)
    again.sync()
    assert again.status().custom["generation_file"] == before, "same rule: no rebuild"
    again.close()
    monkeypatch.setattr(memwell_sqlite.manager, "EMBEDDING_TEXT_VERSION", "title-v2:test")
    second = open_ws(workspace)
    second.sync()
    assert second.status().custom["generation_file"] != before
