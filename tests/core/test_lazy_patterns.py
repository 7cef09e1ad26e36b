"""Regular expressions compile on first use (start-up, issue 16): a keyword-only search with an
ASCII query compiles none of the CJK, chunking or redaction patterns, a short CJK query none of
the CJK classes (they are bisected, :mod:`memwell.retrieval.char_class`), and a lazy pattern
behaves as the compiled one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from memwell.retrieval import fts_query, keywords
from memwell.retrieval.cjk import CJK_CLASS, segment_query_terms
from memwell.retrieval.keywords import extract_keywords, tokenize
from memwell.util.lazy_import import CompiledPattern, LazyPattern, lazy_pattern

PROBE = """
import json, sys
from memwell.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
from memwell.util.lazy_import import CompiledPattern
from memwell.retrieval.char_class import CharClass
compiled = sorted(
    f"{name}.{attr}"
    for name, module in list(sys.modules.items())
    if name.startswith("memwell")
    for attr, value in vars(module).items()
    if isinstance(value, CompiledPattern)
    or (isinstance(value, tuple) and any(isinstance(v, CompiledPattern) for v in value))
    or (isinstance(value, CharClass) and isinstance(value._run, CompiledPattern))
)
print("PROBE", json.dumps(compiled))
"""


def _compiled_after(tmp_path: Path, ws: Path, query: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    args = ["--provider", "none", "-w", str(ws), "search", query]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=True
    )
    line = next(line for line in proc.stdout.splitlines() if line.startswith("PROBE "))
    found: list[str] = json.loads(line.removeprefix("PROBE "))
    return found


def test_a_one_shot_search_compiles_no_cjk_chunking_or_redaction_pattern(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "ports.md").write_text("The amber service listens on port 8125.\n")
    subprocess.run(
        [sys.executable, "-m", "memwell", "--provider", "none", "-w", str(ws), "index"],
        check=True,
        capture_output=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    compiled = _compiled_after(tmp_path, ws, "which port does the amber service listen on")
    assert compiled, "the probe sees the patterns the search used"
    assert not [p for p in compiled if "cjk" in p or "chunking" in p or "redact" in p], compiled
    assert "memwell.retrieval.keywords._HAN" not in compiled
    cjk = _compiled_after(tmp_path, ws, "端口")
    assert cjk, "the probe sees the patterns the CJK search used"
    # a short CJK query is segmented by CharClass's binary search: no CJK class is compiled
    assert not [p for p in cjk if "cjk" in p or "keywords._H" in p or "keywords._KANA" in p], cjk


def test_a_lazy_pattern_matches_as_the_compiled_one_and_compiles_once() -> None:
    source, flags = r"(?P<word>[a-z]+)(\d)?", re.IGNORECASE
    lazy, real = lazy_pattern(source, flags), re.compile(source, flags)
    assert isinstance(lazy, LazyPattern)
    text = "Port 8125 abc1 XYZ"
    assert lazy.findall(text) == real.findall(text)
    assert isinstance(lazy, CompiledPattern), "first use swapped in the compiled attributes"
    assert lazy.sub("-", text) == real.sub("-", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == (
        real.pattern,
        real.flags,
        real.groups,
        real.groupindex,
    )
    assert lazy.fullmatch("abc1") is not None and lazy.match("  x") is None


@given(st.text(alphabet=st.sampled_from("ab Z_9-.é设计ア한"), max_size=24))
def test_the_ascii_shortcut_gives_the_terms_of_the_cjk_split(query: str) -> None:
    """The shortcut equals the CJK-aware split it skips (no CJK class holds an ASCII char)."""
    cjk_or_other = re.compile(f"([{CJK_CLASS}]+)|[^{CJK_CLASS}]+")
    expected: list[str] = []
    for token in tokenize(query):
        for piece in cjk_or_other.finditer(token):
            group = piece.group()
            expected.extend(segment_query_terms(group) if piece.group(1) else [group])
    assert fts_query._word_terms(query) == fts_query._searchable(expected)
    for segment in query.lower().split():
        if segment.isascii():
            assert not re.search(f"[{CJK_CLASS}]", segment)
            assert list(keywords._segment_tokens(segment, False)) == [segment]


def test_mixed_queries_still_split_cjk() -> None:
    assert extract_keywords("that thing we discussed about the API") == ["discussed", "api"]
    assert extract_keywords("API 设计 review") == ["api", "设", "计", "设计", "review"]
