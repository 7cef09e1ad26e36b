"""``--provider none`` over an index built with a model uses it as it is (issue 16 item 7):
no rebuild, the vectors kept, and the next search with the model finds them all."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from memwell.contract.manager import MemorySearchManager
from memwell.testing import HashEmbeddingProvider

OpenFn = Callable[..., MemorySearchManager]


def test_keyword_only_search_keeps_the_hybrid_index(
    open_ws: OpenFn,
    workspace: Path,
    provider: HashEmbeddingProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    hybrid = open_ws(workspace)
    hybrid.sync()
    before = hybrid.status()
    assert before.search_mode == "hybrid" and before.vectors == before.chunks > 0
    hybrid.close()

    keyword = open_ws(workspace, provider="none")
    with caplog.at_level(logging.WARNING):
        keyword.sync()
        keyword.sync()
    hits = keyword.search("Zanzibar codename")
    status = keyword.status()
    keyword.close()
    assert hits and hits[0].path == "memory/2026-01-02.md"
    assert status.search_mode == "fts-only"
    assert status.custom["generation_file"] == before.custom["generation_file"], "no rebuild"
    said = [r.getMessage() for r in caplog.records if "keyword-only search" in r.getMessage()]
    assert len(said) == 1, "said once per manager"
    # one short sentence (issue 40 item 11), naming the model whose index is used as it is
    assert said[0] == (
        f"memwell: keyword-only search; files changed since the last run with {provider.model} "
        "are not indexed."
    )

    calls = provider.calls
    again = open_ws(workspace)
    again.sync()
    after = again.status()
    assert after.custom["generation_file"] == before.custom["generation_file"]
    assert after.vectors == before.vectors and after.search_mode == "hybrid"
    assert provider.calls == calls, "nothing was re-embedded"
