"""Conformance suites that backend and provider packages run against their own plugin.

Usage (in your package's tests)::

    from memwell.testing.conformance import BackendConformance

    class TestMyBackend(BackendConformance):
        @pytest.fixture
        def memory_factory(self):
            def make(workspace: Path) -> MemorySearchManager:
                return MyManager(workspace)
            return make

and for providers::

    class TestMyProvider(ProviderConformance):
        @pytest.fixture
        def provider(self):
            return MyProvider(model="my-model")

Every built-in plugin passes the same suites. Class attributes switch capability-gated tests.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from memwell.agent.tools import memory_search
from memwell.contract.config import MemwellSettings
from memwell.contract.embeddings import EmbeddingProvider, to_unit_matrix
from memwell.contract.errors import PathNotAllowedError
from memwell.contract.manager import MemorySearchManager
from memwell.contract.models import MemorySearchResult, MemoryStatus
from memwell.contract.recall_protocols import content_version, search_many
from memwell.recall.manager import RecallCachedManager

MemoryFactory = Callable[[Path], MemorySearchManager]

HOSTILE_QUERIES = (
    '"unbalanced',
    "NEAR(a b",
    "a OR",
    "*",
    "^start",
    "-not",
    "text:column",
    "((()",
    "a\x00b",
    "x" * 10_000,
    "🙂🚀 emoji",
    "'; DROP TABLE chunks; --",
    "\\%_",
    "AND OR NOT",
)

FACTS = {
    "MEMORY.md": "# Memory\n\nThe staging database listens on port 5433.\n"
    "Alice prefers dark mode in every editor.\n",
    "memory/2026-01-02.md": "# 2026-01-02\n\nWe picked Zanzibar as the codename for the "
    "billing rewrite.\nThe retro is on Thursday.\n",
    "memory/projects.md": "# Projects\n\n## Gardening\nTomatoes need watering every "
    "morning.\n\n## Kubernetes\nThe cluster autoscaler caps at forty nodes.\n",
}


def write_workspace(root: Path, files: dict[str, str] = FACTS) -> Path:
    """Write ``files`` (relative path -> text) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


class MemoryFixtures:
    """The suites' fixtures: ``workspace`` (the :data:`FACTS` files) and ``memory`` (a synced
    manager from the ``memory_factory`` fixture the subclass supplies)."""

    @pytest.fixture
    def workspace(self, tmp_path: Path) -> Path:
        return write_workspace(tmp_path / "ws")

    @pytest.fixture
    def memory(
        self, memory_factory: MemoryFactory, workspace: Path
    ) -> Iterator[MemorySearchManager]:
        manager = memory_factory(workspace)
        manager.sync(reason="conformance")
        yield manager
        manager.close()


class BackendConformance(MemoryFixtures):
    """Behaviour every :class:`~memwell.plugin.MemorySearchManager` must show.

    Supply a ``memory_factory`` fixture returning ``workspace -> manager``. The suite writes
    Markdown files, calls ``sync()``, and checks searching, provenance, safe reads, status and
    incremental updates.
    """

    #: the ``backend`` name status() must report
    backend_name: str = ""
    #: how many edit-and-sync rounds :meth:`test_searches_during_syncs_see_one_state` runs
    concurrency_rounds: int = 12

    def _find(self, memory: MemorySearchManager, query: str) -> list[MemorySearchResult]:
        return memory.search(query, max_results=5, min_score=0.0)

    def test_blank_query_returns_nothing(self, memory: MemorySearchManager) -> None:
        assert memory.search("") == []
        assert memory.search("   \n\t") == []

    def test_keyword_fact_found_with_provenance(self, memory: MemorySearchManager) -> None:
        results = self._find(memory, "Zanzibar codename")
        assert results, "a planted keyword fact must be found"
        top = results[0]
        assert top.path == "memory/2026-01-02.md"
        assert top.start_line <= 3 <= top.end_line
        assert "Zanzibar" in top.snippet

    def test_results_are_well_formed(self, memory: MemorySearchManager) -> None:
        results = self._find(memory, "port database editor tomatoes")
        assert results
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True)
        for r in results:
            assert 0.0 <= r.score <= 1.0
            assert 1 <= r.start_line <= r.end_line
            assert not r.path.startswith("/") and "\\" not in r.path
            assert r.source == "memory"

    def test_max_results_respected(self, memory: MemorySearchManager) -> None:
        assert len(memory.search("the", max_results=1, min_score=0.0)) <= 1

    @pytest.mark.parametrize("query", HOSTILE_QUERIES)
    def test_hostile_queries_never_raise(self, memory: MemorySearchManager, query: str) -> None:
        results = memory.search(query, min_score=0.0)
        assert isinstance(results, list)

    def test_read_file_whole_and_slice(self, memory: MemorySearchManager) -> None:
        whole = memory.read_file("MEMORY.md")
        assert whole.text.splitlines()[2] == "The staging database listens on port 5433."
        part = memory.read_file("MEMORY.md", from_line=3, lines=1)
        assert part.text == "The staging database listens on port 5433."
        assert memory.read_file("MEMORY.md", from_line=999, lines=5).text == ""

    def test_read_missing_memory_file_is_empty(self, memory: MemorySearchManager) -> None:
        assert memory.read_file("memory/nope.md").text == ""

    @pytest.mark.parametrize(
        "path", ["../outside.md", "/etc/passwd", "memory/../../x.md", "notes.txt", ""]
    )
    def test_read_file_refuses_escapes(self, memory: MemorySearchManager, path: str) -> None:
        with pytest.raises(PathNotAllowedError):
            memory.read_file(path)

    def test_status(self, memory: MemorySearchManager, workspace: Path) -> None:
        status = memory.status()
        assert isinstance(status, MemoryStatus)
        if self.backend_name:
            assert status.backend == self.backend_name
        assert Path(status.workspace_dir).resolve() == workspace.resolve()
        assert status.files >= 3

    def test_incremental_edit_and_delete(
        self, memory: MemorySearchManager, workspace: Path
    ) -> None:
        (workspace / "memory" / "2026-01-02.md").write_text(
            "# 2026-01-02\n\nThe codename is now Quokka.\n", encoding="utf-8"
        )
        (workspace / "memory" / "new.md").write_text("Pelicans nest by the lake.\n")
        memory.sync(reason="conformance-edit")
        assert any("Quokka" in r.snippet for r in self._find(memory, "Quokka"))
        assert not any("Zanzibar" in r.snippet for r in self._find(memory, "Zanzibar"))
        assert any(r.path == "memory/new.md" for r in self._find(memory, "pelicans lake"))
        (workspace / "memory" / "new.md").unlink()
        memory.sync(reason="conformance-delete")
        assert not any(r.path == "memory/new.md" for r in self._find(memory, "pelicans lake"))

    def test_close_is_idempotent(self, memory_factory: MemoryFactory, workspace: Path) -> None:
        manager = memory_factory(workspace)
        manager.close()
        manager.close()

    def test_search_many_equals_single_searches(self, memory: MemorySearchManager) -> None:
        queries = ["Zanzibar codename", "port database", "", "tomatoes", "Zanzibar codename"]
        batch = search_many(memory, queries, max_results=4, min_score=0.0)
        assert batch == [memory.search(q, max_results=4, min_score=0.0) for q in queries]
        assert batch[0] and batch[2] == []

    def test_tool_payload_fits_the_injection_budget(self, memory: MemorySearchManager) -> None:
        query = "port database editor tomatoes codename Zanzibar"
        full = memory_search(memory, query, max_results=5, min_score=0.0, citations="on")
        snippets = [r["snippet"] for r in full["results"]]
        assert len(snippets) >= 2 and not full["truncated"]
        second_line = snippets[1].split("\n", 1)[0]
        budget = len(snippets[0]) + len(second_line) + 1
        cut = memory_search(
            memory, query, max_results=5, min_score=0.0, citations="on", max_injected_chars=budget
        )
        shown = [r["snippet"] for r in cut["results"]]
        assert cut["truncated"] and cut["max_injected_chars"] == budget
        assert sum(map(len, shown)) == cut["injected_chars"] <= budget
        assert len(shown) == 2 and shown[0] == snippets[0]  # whole hits first
        assert snippets[1].startswith(shown[1]) and snippets[1][len(shown[1])] == "\n"
        assert cut["results"][1]["truncated"] and "truncated" not in cut["results"][0]

    def test_recall_cache_never_hides_a_written_note(
        self, memory: MemorySearchManager, workspace: Path
    ) -> None:
        cached = RecallCachedManager(memory, MemwellSettings())
        query = "pelicans nesting lake"
        before = cached.search(query, max_results=5, min_score=0.0)
        cached.search(query, max_results=5, min_score=0.0)
        stats = cached.cache_status()
        assert stats.exact.hits == (1 if content_version(memory) is not None else 0)
        assert not any(r.path == "memory/pelicans.md" for r in before)
        (workspace / "memory" / "pelicans.md").write_text("Pelicans nest by the lake.\n")
        cached.sync(reason="conformance-write")
        after = cached.search(query, max_results=5, min_score=0.0)
        assert any(r.path == "memory/pelicans.md" for r in after)

    def test_searches_during_syncs_see_one_state(
        self, memory: MemorySearchManager, workspace: Path
    ) -> None:
        """Searches running while syncs rewrite every file never raise, and each hit is one
        version of its file (its text and its line numbers agree) no older than the last
        sync that finished before the search began."""
        names = [f"memory/round-{k}.md" for k in range(6)]

        def write_round(round_no: int) -> None:
            for k, rel in enumerate(names):
                padding = "\n" * (round_no % 3)  # each round moves the fact to another line
                text = f"# Round file {k}\n{padding}Quetzal feather count r{round_no} f{k}.\n"
                (workspace / rel).write_text(text, encoding="utf-8")

        write_round(0)
        memory.sync(reason="conformance")
        synced = [0]  # the newest round a finished sync has indexed
        done = threading.Event()
        failures: list[str] = []
        fact = re.compile(r"Quetzal feather count r(\d+) f(\d+)\.")

        def read() -> None:
            while not done.is_set() and not failures:
                floor = synced[0]
                try:
                    hits = memory.search("quetzal feather count", max_results=10, min_score=0.0)
                except Exception as exc:  # the failure this test exists to catch
                    failures.append(f"search raised {type(exc).__name__}: {exc}")
                    return
                for hit in hits:
                    if not hit.path.startswith("memory/round-"):
                        continue
                    for offset, line in enumerate(hit.snippet.splitlines()):
                        found = fact.search(line)
                        if found is None:
                            continue
                        round_no = int(found.group(1))
                        if hit.path != names[int(found.group(2))]:
                            failures.append(f"{hit.path} shows another file's text: {line}")
                        elif hit.start_line + offset != 2 + round_no % 3:
                            failures.append(f"{hit.path}: round {round_no} at a wrong line")
                        elif round_no < floor:
                            failures.append(f"{hit.path}: round {round_no} after {floor} synced")

        readers = [threading.Thread(target=read) for _ in range(3)]
        for reader in readers:
            reader.start()
        try:
            for round_no in range(1, self.concurrency_rounds + 1):
                write_round(round_no)
                memory.sync(reason="conformance-concurrent")
                synced[0] = round_no
                if failures:
                    break
        finally:
            done.set()
            for reader in readers:
                reader.join(timeout=60)
        assert not failures, failures[:5]
        last = memory.search("quetzal feather count", max_results=10, min_score=0.0)
        assert any(f"r{self.concurrency_rounds} " in hit.snippet for hit in last)


class ProviderConformance:
    """Behaviour every :class:`~memwell.plugin.EmbeddingProvider` must show.

    Supply a ``provider`` fixture. ``semantic = True`` adds a paraphrase-ranking check for
    real models (hash or fake providers leave it off).
    """

    semantic: bool = False
    #: how much closer a paraphrase must be than unrelated text (models whose cosines crowd
    #: into a narrow band, such as e5's, set it lower)
    semantic_margin: float = 0.1

    TEXTS = ("The cat sleeps on the sofa.", "部署到生产环境", "emoji 🙂 and accents café", "x")

    def test_identity(self, provider: EmbeddingProvider) -> None:
        assert isinstance(provider.id, str) and provider.id
        assert isinstance(provider.model, str) and provider.model
        assert "/" not in provider.id

    def test_batch_shape_and_order(self, provider: EmbeddingProvider) -> None:
        vectors = to_unit_matrix(provider.embed_batch(list(self.TEXTS)))
        assert vectors.shape[0] == len(self.TEXTS)
        assert vectors.shape[1] > 0
        assert np.isfinite(vectors).all()
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
        single = to_unit_matrix(provider.embed_batch([self.TEXTS[1]]))
        assert single.shape == (1, vectors.shape[1])

    def test_query_matches_dims(self, provider: EmbeddingProvider) -> None:
        batch = to_unit_matrix(provider.embed_batch(["hello world"]))
        query = np.asarray(provider.embed_query("hello world"), dtype=np.float32)
        assert query.shape == (batch.shape[1],)
        if provider.dims is not None:
            assert provider.dims == batch.shape[1]

    def test_deterministic(self, provider: EmbeddingProvider) -> None:
        a = to_unit_matrix(provider.embed_batch(["stable text"]))
        b = to_unit_matrix(provider.embed_batch(["stable text"]))
        assert float(a[0] @ b[0]) > 0.999

    def test_cache_key_data_is_json(self, provider: EmbeddingProvider) -> None:
        method = getattr(provider, "cache_key_data", None)
        data = method() if callable(method) else {"provider": provider.id}
        encoded = json.dumps(data, sort_keys=True)
        assert provider.id in encoded
        for secret_word in ("api_key", "authorization"):
            assert secret_word not in encoded.lower()

    def test_max_input_tokens_sane(self, provider: EmbeddingProvider) -> None:
        limit = provider.max_input_tokens
        assert limit is None or (isinstance(limit, int) and limit > 0)

    def test_paraphrase_ranks_above_unrelated(self, provider: EmbeddingProvider) -> None:
        if not self.semantic:
            pytest.skip("provider is not a semantic model")
        v = to_unit_matrix(
            provider.embed_batch(
                ["How do I reset my password?", "I forgot my login credentials", "Tomato soup"]
            )
        )
        assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + self.semantic_margin
        assert not math.isnan(float(v[0] @ v[1]))
