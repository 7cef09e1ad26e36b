"""FallbackMemoryManager: serve the primary until it fails, then a lazily built fallback."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from memwell.contract.errors import BackendUnavailableError, PathNotAllowedError
from memwell.contract.manager import MemorySearchManager, ProgressCallback
from memwell.contract.models import MemorySearchResult, MemoryStatus, ProbeResult, ReadFileResult
from memwell.runtime.fallback import FallbackMemoryManager


class FakeManager:
    """Counts calls per method; raises ``fail_with`` from any method named in ``failing``."""

    def __init__(self, name: str, *, fail_with: BaseException | None = None, failing: Any = ()):
        self.name = name
        self.fail_with = fail_with
        self.failing = set(failing) or {
            "search",
            "read_file",
            "status",
            "sync",
            "probe_embedding",
            "probe_vector",
        }
        self.calls: Counter[str] = Counter()
        self.closed = 0
        self._lock = threading.Lock()

    def _enter(self, method: str) -> None:
        with self._lock:
            self.calls[method] += 1
        if self.fail_with is not None and method in self.failing:
            raise self.fail_with

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        self._enter("search")
        return [
            MemorySearchResult(
                path=f"{self.name}.md",
                start_line=1,
                end_line=max_results or 1,
                score=min_score if min_score is not None else 0.5,
                snippet=query,
                source=(sources or ["memory"])[0],
            )
        ]

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        self._enter("read_file")
        if rel_path.startswith(".."):
            raise PathNotAllowedError(f"{rel_path} escapes the workspace")
        return ReadFileResult(path=rel_path, text=f"{self.name}:{from_line}:{lines}")

    def status(self) -> MemoryStatus:
        self._enter("status")
        return MemoryStatus(
            backend=self.name, provider="none", workspace_dir="/ws", custom={"own": 1}
        )

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        progress: ProgressCallback | None = None,
    ) -> None:
        self._enter("sync")
        self.last_sync = (reason, force)

    def probe_embedding(self) -> ProbeResult:
        self._enter("probe_embedding")
        return ProbeResult(ok=True, error=self.name)

    def probe_vector(self) -> ProbeResult:
        self._enter("probe_vector")
        return ProbeResult(ok=True, error=self.name)

    def close(self) -> None:
        self.closed += 1


class Factory:
    def __init__(self, manager: FakeManager | None = None, error: Exception | None = None):
        self.manager = manager or FakeManager("builtin")
        self.error = error
        self.builds = 0
        self.delay = 0.0

    def __call__(self) -> MemorySearchManager:
        self.builds += 1
        if self.delay:
            time.sleep(self.delay)  # widen the race window in the thread test
        if self.error is not None:
            raise self.error
        return self.manager


def test_fakes_satisfy_the_protocol() -> None:
    assert isinstance(FakeManager("x"), MemorySearchManager)


def test_primary_serves_while_healthy_and_fallback_is_never_built() -> None:
    primary = FakeManager("primary")
    factory = Factory()
    mgr = FallbackMemoryManager(primary, factory, primary_name="qmd")
    hits = mgr.search("q", max_results=3, min_score=0.2, sources=["sessions"])
    assert [(h.path, h.end_line, h.score, h.source) for h in hits] == [
        ("primary.md", 3, 0.2, "sessions")
    ]
    assert mgr.read_file("a.md", from_line=2, lines=4).text == "primary:2:4"
    mgr.sync(reason="test", force=True)
    assert primary.last_sync == ("test", True)
    status = mgr.status()
    assert status.backend == "primary" and status.fallback is None
    assert "fallback" not in status.custom
    assert factory.builds == 0 and primary.closed == 0
    assert mgr.primary_failed is False


def test_first_failure_switches_closes_primary_and_builds_fallback_once() -> None:
    primary = FakeManager("primary", fail_with=RuntimeError("qmd crashed"))
    factory = Factory()
    switches: list[FallbackMemoryManager] = []
    mgr = FallbackMemoryManager(primary, factory, primary_name="qmd", on_switch=switches.append)

    hits = mgr.search("hello")
    assert hits[0].path == "builtin.md"  # the failing call itself is served by the fallback
    assert primary.calls["search"] == 1
    assert primary.closed == 1
    assert factory.builds == 1
    assert switches == [mgr]
    assert isinstance(mgr.last_error, RuntimeError)

    # every later call goes to the fallback, the primary is never touched again
    assert mgr.search("again")[0].path == "builtin.md"
    assert mgr.read_file("x.md").text == "builtin:None:None"
    mgr.sync()
    assert mgr.probe_embedding().error == "builtin"
    assert mgr.probe_vector().error == "builtin"
    assert sum(primary.calls.values()) == 1
    assert factory.builds == 1
    assert factory.manager.calls["search"] == 2
    assert switches == [mgr]  # reported once


@pytest.mark.parametrize("method", ["read_file", "sync", "probe_embedding", "probe_vector"])
def test_any_method_failure_switches(method: str) -> None:
    primary = FakeManager("primary", fail_with=OSError("disk gone"), failing={method})
    factory = Factory()
    mgr = FallbackMemoryManager(primary, factory)
    assert mgr.search("ok")[0].path == "primary.md"
    args: tuple[Any, ...] = ("f.md",) if method == "read_file" else ()
    getattr(mgr, method)(*args)
    assert mgr.primary_failed and primary.closed == 1 and factory.builds == 1
    assert mgr.search("after")[0].path == "builtin.md"


def test_status_reports_switch_and_reason() -> None:
    primary = FakeManager("primary", fail_with=RuntimeError("index corrupt"))
    mgr = FallbackMemoryManager(primary, Factory(), primary_name="lancedb", fallback_name="builtin")
    mgr.search("x")
    status = mgr.status()
    assert status.backend == "builtin"
    assert status.fallback is not None
    assert status.fallback.from_ == "lancedb"
    assert status.fallback.to == "builtin"
    assert "RuntimeError" in status.fallback.reason and "index corrupt" in status.fallback.reason
    assert status.custom["own"] == 1  # the fallback's own custom data is kept
    assert status.custom["fallback"] == {"disabled": True, "reason": status.fallback.reason}
    dumped = status.model_dump(mode="json", by_alias=True)
    assert dumped["fallback"]["from"] == "lancedb"


def test_status_failure_of_primary_switches_too() -> None:
    primary = FakeManager("primary", fail_with=ValueError("bad"), failing={"status"})
    factory = Factory()
    mgr = FallbackMemoryManager(primary, factory, primary_name="p")
    status = mgr.status()
    assert status.backend == "builtin" and status.fallback is not None
    assert primary.closed == 1 and factory.builds == 1


def test_path_not_allowed_does_not_switch() -> None:
    primary = FakeManager("primary")
    factory = Factory()
    mgr = FallbackMemoryManager(primary, factory)
    with pytest.raises(PathNotAllowedError):
        mgr.read_file("../etc/passwd.md")
    assert not mgr.primary_failed
    assert primary.closed == 0 and factory.builds == 0
    assert mgr.search("still primary")[0].path == "primary.md"


def test_primary_none_with_primary_error() -> None:
    error = FileNotFoundError("qmd binary not found")
    factory = Factory()
    switches: list[FallbackMemoryManager] = []
    mgr = FallbackMemoryManager(
        None, factory, primary_name="qmd", primary_error=error, on_switch=switches.append
    )
    assert mgr.primary_failed
    assert mgr.search("x")[0].path == "builtin.md"
    status = mgr.status()
    assert status.fallback is not None and status.fallback.from_ == "qmd"
    assert "qmd binary not found" in status.fallback.reason
    assert factory.builds == 1


def test_unbuildable_fallback_says_there_is_none() -> None:
    original = RuntimeError("primary exploded")
    primary = FakeManager("primary", fail_with=original)
    factory = Factory(error=OSError("cannot open sqlite"))
    mgr = FallbackMemoryManager(primary, factory, primary_name="acme", workspace="/ws")
    with pytest.raises(BackendUnavailableError) as info:
        mgr.search("x")
    message = str(info.value)
    assert "backend 'acme' failed (RuntimeError: primary exploded)" in message
    assert "no fallback" in message and "OSError: cannot open sqlite" in message
    assert info.value.__cause__ is original
    assert primary.closed == 1
    # no half-built state: the next call tries to build again and says the same
    with pytest.raises(BackendUnavailableError, match="no fallback"):
        mgr.search("y")
    assert factory.builds == 2
    assert primary.calls["search"] == 1
    # status reports search as disabled, with both reasons, instead of raising
    status = mgr.status()
    assert status.search_mode == "disabled" and status.backend == "acme"
    assert status.workspace_dir == "/ws"
    assert status.fallback is not None and status.fallback.to is None
    assert "primary exploded" in status.fallback.reason
    assert "cannot open sqlite" in status.fallback.reason


def test_unbuildable_fallback_without_primary_error() -> None:
    mgr = FallbackMemoryManager(None, Factory(error=OSError("nope")))
    with pytest.raises(BackendUnavailableError, match="unavailable and there is no fallback"):
        mgr.search("x")
    mgr.close()
    with pytest.raises(BackendUnavailableError, match="closed"):
        mgr.status()


def test_close_closes_both_and_is_idempotent() -> None:
    primary = FakeManager("primary", fail_with=RuntimeError("x"))
    factory = Factory()
    mgr = FallbackMemoryManager(primary, factory)
    mgr.search("x")
    mgr.close()
    mgr.close()
    assert primary.closed == 1  # closed once by the switch, not again by close()
    assert factory.manager.closed == 1
    assert mgr.closed
    with pytest.raises(BackendUnavailableError):
        mgr.search("after close")
    assert factory.builds == 1


def test_close_before_any_failure_closes_primary_only() -> None:
    primary = FakeManager("primary")
    factory = Factory()
    closes: list[FallbackMemoryManager] = []
    mgr = FallbackMemoryManager(primary, factory, on_switch=closes.append)
    mgr.close()
    assert primary.closed == 1 and factory.builds == 0
    assert closes == [mgr]  # lets open_memory evict its cache entry
    with pytest.raises(BackendUnavailableError):
        mgr.search("x")
    assert primary.calls["search"] == 0


def test_close_of_failing_managers_is_swallowed() -> None:
    class BadClose(FakeManager):
        def close(self) -> None:
            raise RuntimeError("close failed")

    primary = BadClose("primary", fail_with=RuntimeError("x"))
    fallback = BadClose("builtin")
    mgr = FallbackMemoryManager(primary, Factory(fallback))
    assert mgr.search("x")[0].path == "builtin.md"
    mgr.close()
    assert mgr.closed


def test_concurrent_calls_after_failure_build_fallback_once() -> None:
    primary = FakeManager("primary", fail_with=RuntimeError("down"))
    factory = Factory()
    factory.delay = 0.02
    switches: list[FallbackMemoryManager] = []
    mgr = FallbackMemoryManager(primary, factory, on_switch=switches.append)
    barrier = threading.Barrier(8)
    results: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            results.append(mgr.search("q")[0].path)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors
    assert results == ["builtin.md"] * 8
    assert factory.builds == 1
    assert primary.closed == 1
    assert len(switches) == 1


async def _async_search(mgr: FallbackMemoryManager) -> list[MemorySearchResult]:
    return await mgr.async_search("async", max_results=2)


def test_async_wrapper_uses_the_same_switching() -> None:
    import asyncio

    primary = FakeManager("primary", fail_with=RuntimeError("x"))
    factory = Factory()
    mgr = FallbackMemoryManager(primary, factory)
    hits = asyncio.run(_async_search(mgr))
    assert hits[0].path == "builtin.md" and hits[0].end_line == 2
    assert factory.builds == 1


@pytest.mark.parametrize(("failing", "reason"), [("search", "fallback"), ("sync", "cli")])
def test_a_fallback_built_after_a_sync_is_synced_once_before_it_serves(
    failing: str, reason: str
) -> None:
    """The caller synced and searched: the fallback must not answer from an index nobody
    brought up to date (whether the primary failed in the search or in the sync itself)."""
    primary = FakeManager("primary", fail_with=RuntimeError("crash"), failing={failing})
    factory = Factory()
    mgr = FallbackMemoryManager(primary, factory, primary_name="qmd")
    mgr.sync(reason="cli")
    mgr.search("q")
    assert factory.manager.calls["sync"] == 1 and factory.manager.last_sync[0] == reason


def test_a_fallback_is_not_synced_when_nobody_asked_for_a_sync() -> None:
    primary = FakeManager("primary", fail_with=RuntimeError("crash"), failing={"search"})
    factory = Factory()
    FallbackMemoryManager(primary, factory, primary_name="qmd").search("q")
    assert factory.manager.calls["sync"] == 0
