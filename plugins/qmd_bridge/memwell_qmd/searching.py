"""Searching through qmd: the mode the search runs in, its fallbacks and the keyword rescue,
and the hits turned into ranked candidates within the snippet budget.

:class:`QmdSearching` is the second layer of :class:`~memwell_qmd.manager.QmdMemoryManager`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from memwell.plugin import ALL_STOPWORDS, BackendContext, Candidate, truncate_snippet

from .backoff import Backoff
from .config import QmdConfig, SearchModeName
from .errors import (
    QmdCollectionMissing,
    QmdConfigError,
    QmdModelUnavailable,
    QmdTimeout,
    QmdUnsupportedFlag,
)
from .parsing import QmdHit, parse_search_output
from .updates import QmdUpdates

log = logging.getLogger(__name__)

SOURCE = "memory"
MAX_RESCUE_KEYWORDS = 8
_WORD = re.compile(r"\w+")


def rescue_keywords(query: str) -> list[str]:
    """Distinct keywords of ``query``: no stop words, digits or ASCII words under 3 letters."""
    keywords: list[str] = []
    for word in _WORD.findall(query.lower()):
        short = word.isascii() and word.isalpha() and len(word) < 3
        if word in ALL_STOPWORDS or word.isdigit() or short or word in keywords:
            continue
        keywords.append(word)
    return keywords[:MAX_RESCUE_KEYWORDS]


class QmdSearching(QmdUpdates):
    """Runs searches in the configured mode, falling back per mode and backing off."""

    def __init__(self, ctx: BackendContext, config: QmdConfig) -> None:
        super().__init__(ctx, config)
        self._mode_backoff = Backoff()
        self._mode_fallback: str | None = None
        self._effective_mode: SearchModeName = config.search_mode

    def _wanted_mode(self) -> tuple[SearchModeName, str | None]:
        mode = self.config.search_mode
        if mode == "search":
            return mode, None
        problems = self._missing_models(mode)
        if problems:
            return "search", f"{mode} unavailable: " + "; ".join(problems.values())
        if self._mode_backoff.active():
            return "search", f"{mode} failed recently: {self._mode_backoff.last_error}"
        return mode, None

    def _run_search(
        self,
        mode: str,
        query: str,
        limit: int,
        min_score: float,
        names: Sequence[str],
        extra: Sequence[str] = (),
    ) -> list[QmdHit]:
        args = [mode, "--json", "-n", str(limit), "--min-score", f"{min_score:g}", *extra]
        for name in names:
            args += ["-c", name]
        args += ["--", query]
        out = self.runner.run(args, timeout=self.config.timeouts.search)
        return parse_search_output(out.stdout, out.stderr)

    def _keyword_rescue(
        self, query: str, limit: int, min_score: float, names: Sequence[str]
    ) -> list[QmdHit] | None:
        """BM25 ``search`` needs every term; when that finds nothing, search each keyword.

        One structured ``query`` of ``lex:`` lines without rerank needs no model and fuses
        the per-keyword BM25 lists. Returns ``None`` when that would repeat the search.
        """
        words = rescue_keywords(query)
        if not words or [query.strip().lower()] == words:
            return None  # the same single-term search again
        document = "\n".join(f"lex: {word}" for word in words)
        return self._run_search("query", document, limit, min_score, names, ["--no-rerank"])

    def _search_hits(
        self, query: str, limit: int, min_score: float, names: Sequence[str]
    ) -> list[QmdHit]:
        """Run the search in the effective mode with its per-mode fallbacks.

        A strict BM25 search without hits is retried per keyword (:meth:`_keyword_rescue`).
        A missing collection is re-created and the search retried once; a rejected flag
        retries as ``query``; a model-backed mode that fails for want of a model, times out
        or is gated retries as BM25 ``search`` and is avoided for a backoff period.
        """
        mode, reason = self._wanted_mode()
        tried: set[str] = set()
        repaired = False
        while True:
            tried.add(mode)
            try:
                hits = self._run_search(mode, query, limit, min_score, names)
            except QmdCollectionMissing:
                if repaired:
                    raise
                repaired = True
                self._reconcile()
                names = [name for name in names if name in self._present]
                continue
            except QmdUnsupportedFlag as exc:
                if "query" in tried:
                    raise
                mode, reason = "query", f"unsupported-search-flags: {exc}"
                continue
            except (QmdModelUnavailable, QmdTimeout, QmdConfigError) as exc:
                if "search" in tried:
                    raise
                self._mode_backoff.fail(str(exc))
                log.warning("qmd %s failed (%s); using BM25 search", mode, exc)
                mode, reason = "search", f"{mode} failed: {exc}"
                continue
            if mode == self.config.search_mode:
                self._mode_backoff.reset()
            if mode == "search" and not hits:
                rescued = self._keyword_rescue(query, limit, min_score, names)
                if rescued is not None:
                    hits, reason = rescued, reason or "keyword-rescue"
            self._effective_mode, self._mode_fallback = mode, reason
            return hits

    def _candidates(self, hits: Sequence[QmdHit], min_score: float) -> list[Candidate]:
        """The hits mapped to managed files, best per line range, ranked, and cut to the
        snippet budget ``max_injected_chars``."""
        best: dict[tuple[str, int, int], tuple[float, QmdHit]] = {}
        for hit in hits:
            score = min(1.0, max(0.0, hit.score))
            if score < min_score:
                continue
            path = self.locator.locate(hit)
            if path is None:
                log.debug("qmd hit not mappable to a managed file: %s", hit)
                continue
            key = (path, hit.start_line, hit.end_line)
            if key not in best or score > best[key][0]:
                best[key] = (score, hit)
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0][0], item[0][1]))
        budget = self.config.max_injected_chars
        found: list[Candidate] = []
        for (path, start, end), (score, hit) in ranked:
            if budget <= 0:
                break
            snippet = truncate_snippet(hit.snippet, min(self.snippet_chars, budget))
            budget -= len(snippet)
            found.append(
                Candidate(
                    id=f"{path}:{start}:{end}",
                    path=path,
                    start_line=start,
                    end_line=end,
                    text=snippet,
                    source=SOURCE,
                    score=score,
                )
            )
        return found
