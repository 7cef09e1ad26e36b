"""Hostile input, property-based (seeded): queries, config, session JSONL and read paths.

Every example must give a well-formed answer or the documented error type, never another
exception, and nothing outside the allowed memory files may ever be read.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwell.agent.tools import execute_tool
from memwell.contract.config import MemwellSettings, load_settings
from memwell.contract.errors import ConfigError, PathNotAllowedError
from memwell.sources import paths as paths_module
from memwell.sources.sessions import parse_session_jsonl
from memwell_sqlite.manager import SqliteMemoryManager
from reliability_helpers import (
    COUNTS,
    build_manager,
    make_corpus,
    make_registry,
    make_settings,
    write_files,
)

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

#: Every code point, lone surrogates and control characters included.
ANY_CHAR = st.characters(codec=None, categories=None, exclude_categories=[])
FTS_BITS = st.sampled_from(
    [
        '"',
        "'",
        "NEAR(",
        "NEAR/2",
        "AND",
        "OR",
        "NOT",
        "*",
        "^",
        ":",
        "(",
        ")",
        "-",
        "+",
        "{",
        "}",
        "\\",
        "%",
        "_",
        ";",
        "--",
        "\x00",
        "\u202e",
        "\ufeff",
        "\ud800",
        "🙂",
        "中文检索",
        "ß",
        "İ",
        "chunks_fts",
        "rank",
        "text:",
        "meadow",
        "MATCH",
        "\n",
        "\t",
        "\r\n",
        " ",
    ]
)
QUERIES = st.one_of(
    st.text(ANY_CHAR, max_size=300),
    st.lists(FTS_BITS, max_size=30).map("".join),
    st.lists(st.one_of(FTS_BITS, st.text(ANY_CHAR, max_size=6)), max_size=40).map(" ".join),
)
LOOSE_NUMBERS = st.one_of(
    st.none(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=4),
)


@pytest.fixture(scope="module")
def query_managers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[SqliteMemoryManager]]:
    """A hybrid (hash, unicode61) and a keyword-only (trigram) index of the same files."""
    workspace = tmp_path_factory.mktemp("queries")
    files = make_corpus(40, 1, 99)
    files["memory/unicode.md"] = "# Ünïcödé\n\n中文检索 works. Emoji 🙂 here. ß İ ﬁ\n"
    write_files(workspace, files)
    managers = []
    for overrides in (
        {},
        {"provider": "none", "store": {"fts": {"tokenizer": "trigram"}}, "index_dir": ".tri"},
    ):
        manager = build_manager(workspace, make_settings(**overrides), make_registry())
        manager.sync()
        managers.append(manager)
    yield managers
    for manager in managers:
        manager.close()


def check_query(managers: list[SqliteMemoryManager], query: str, **tool_args: Any) -> None:
    for manager in managers:
        known = {r.path for r in manager.search("meadow", min_score=0.0, max_results=100)}
        for hit in manager.search(query, min_score=0.0):
            assert 0.0 <= hit.score <= 1.0
            assert 1 <= hit.start_line <= hit.end_line
            assert hit.path.startswith("memory/") or hit.path == "MEMORY.md"
            assert known
        payload = execute_tool("memory_search", {"query": query, **tool_args}, manager)
        json.dumps(payload)
        assert "disabled" not in payload, payload
        assert payload.get("untrusted_data") or "error" in payload or "warning" in payload
    COUNTS["fuzzed queries"] += 1


@settings(FUZZ, max_examples=250)
@given(query=QUERIES)
def test_query_path_survives_anything(
    query_managers: list[SqliteMemoryManager], query: str
) -> None:
    check_query(query_managers, query)


@settings(FUZZ, max_examples=60)
@given(query=QUERIES, max_results=LOOSE_NUMBERS, min_score=LOOSE_NUMBERS)
def test_search_tool_arguments_survive_anything(
    query_managers: list[SqliteMemoryManager], query: str, max_results: Any, min_score: Any
) -> None:
    for manager in query_managers:
        args = {"query": query, "max_results": max_results, "min_score": min_score}
        payload = execute_tool("memory_search", args, manager)
        json.dumps(payload)
        assert "disabled" not in payload, payload
    COUNTS["fuzzed queries"] += 1


HUGE = (
    "x" * 300_000,
    " ".join(f"w{i}" for i in range(30_000)),
    "(" * 100_000,
    '"' * 100_001,
    "\n" * 100_000 + "meadow",
    "meadow " * 15_000,
    "中" * 100_000,
    "\ud800" * 10_000,
    "NEAR(" * 20_000,
)


@pytest.mark.parametrize("query", HUGE, ids=range(len(HUGE)))
def test_huge_queries(query_managers: list[SqliteMemoryManager], query: str) -> None:
    check_query(query_managers, query)


# -- configuration ---------------------------------------------------------------------------

CONFIG_KEYS = st.sampled_from(
    [
        "provider",
        "backend",
        "model",
        "fallback",
        "sources",
        "extra_paths",
        "index_dir",
        "citations",
        "chunking.tokens",
        "chunking.overlap",
        "query.max_results",
        "query.min_score",
        "query.hybrid.vector_weight",
        "query.hybrid.mmr.lambda",
        "query.hybrid.temporal_decay.half_life_days",
        "sync.interval_minutes",
        "sync.watch_debounce_ms",
        "store.fts.tokenizer",
        "store.vector.enabled",
        "cache.max_entries",
        "remote.timeout_seconds",
        "remote.headers",
        "backends.builtin.vector_engine",
        "backends.nope.x",
        "providers.hash.x",
        "unknown",
        "a.b.c.d",
        "",
    ]
)
TOML_VALUES = st.sampled_from(
    [
        "1",
        "-1",
        "0",
        "1e400",
        "-1e400",
        "inf",
        "nan",
        "-inf",
        "1.5",
        '"x"',
        '"none"',
        '"hash"',
        '"trigram"',
        '""',
        "[]",
        '["memory", "sessions"]',
        '["nope"]',
        "[1, 2]",
        "{}",
        "{ a = 1 }",
        "true",
        '"\\u0000"',
        "[[[[1]]]]",
        "1979-05-27T07:32:00Z",
        "0x10",
        "99999999999999999999999",
        '"""multi\nline"""',
    ]
)
TOML_LINES = st.one_of(
    st.tuples(CONFIG_KEYS, TOML_VALUES).map(lambda kv: f"{kv[0]} = {kv[1]}" if kv[0] else ""),
    st.sampled_from(["[sync]", "[query]", "[backends.builtin]", "[[x]]", "[", "= 1", "a =", "#"]),
    st.text(ANY_CHAR, max_size=20),
)
JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(ANY_CHAR, max_size=12),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
OVERRIDES = st.dictionaries(
    st.one_of(st.sampled_from(list(MemwellSettings.__struct_fields__)), st.text(max_size=6)),
    st.one_of(
        JSON_VALUES,
        st.dictionaries(
            st.sampled_from(["watch", "tokens", "max_results", "fts", "hybrid", "x"]), JSON_VALUES
        ),
    ),
    max_size=4,
)
ENV = st.dictionaries(
    st.one_of(
        CONFIG_KEYS.map(lambda k: "MEMWELL_" + k.upper().replace(".", "__")),
        st.text(st.characters(min_codepoint=48, max_codepoint=95), max_size=10).map(
            lambda s: "MEMWELL_" + s
        ),
    ),
    st.one_of(
        TOML_VALUES,
        st.text(ANY_CHAR, max_size=20),
        JSON_VALUES.map(lambda v: json.dumps(v, allow_nan=True)),
    ),
    max_size=4,
)


def load_or_config_error(workspace: Path, **kwargs: Any) -> None:
    try:
        loaded = load_settings(
            workspace, user_config=workspace / "no-user.toml", registry=make_registry(), **kwargs
        )
    except ConfigError:
        return
    loaded.fingerprint()  # the cache key must be computable for whatever was accepted
    json.dumps(loaded.model_dump(mode="json", by_alias=True), allow_nan=False)


@settings(FUZZ, max_examples=120)
@given(
    lines=st.lists(TOML_LINES, max_size=12),
    raw=st.binary(max_size=200),
    env=ENV,
    overrides=OVERRIDES,
)
def test_config_loader_only_raises_config_errors(
    tmp_path: Path, lines: list[str], raw: bytes, env: dict[str, str], overrides: dict[str, Any]
) -> None:
    config = tmp_path / "memwell.toml"
    for data in ("\n".join(lines).encode("utf-8", "surrogatepass"), raw):
        config.write_bytes(data)
        load_or_config_error(tmp_path, environ={})
    config.unlink()
    load_or_config_error(tmp_path, environ=env)
    load_or_config_error(tmp_path, environ={}, overrides=overrides)
    COUNTS["configs fuzzed"] += 1


@pytest.mark.parametrize(
    "data",
    [
        b"x = " + b"[" * 5000 + b"]" * 5000,
        b"x = " + b"{a = " * 3000 + b"1" + b"}" * 3000,
        b'provider = "\xff\xfe"',
        b"\xef\xbb\xbfprovider = 'none'",
        b"sync.interval_minutes = inf",
        b"sync.interval_minutes = 1e300",
        b"query.min_score = nan",
    ],
)
def test_config_loader_hostile_files(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "memwell.toml").write_bytes(data)
    with pytest.raises(ConfigError):
        load_settings(tmp_path, environ={}, user_config=tmp_path / "none.toml")
    deep = {"MEMWELL_SOURCES": "[" * 100_000 + "]" * 100_000}
    with pytest.raises(ConfigError):
        load_settings(tmp_path / "absent", environ=deep, user_config=tmp_path / "none.toml")
    COUNTS["configs fuzzed"] += 1


# -- session transcripts ---------------------------------------------------------------------

CONTENT = st.one_of(
    st.text(ANY_CHAR, max_size=40),
    st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {"type": st.just("text"), "text": st.text(ANY_CHAR, max_size=30)}
            ),
            JSON_VALUES,
        ),
        max_size=4,
    ),
    JSON_VALUES,
)
RECORDS = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["message", "custom", "x"]),
            "message": st.fixed_dictionaries(
                {
                    "role": st.one_of(
                        st.sampled_from(["user", "assistant", "system"]), JSON_LEAVES
                    ),
                    "content": CONTENT,
                },
                optional={"timestamp": JSON_LEAVES},
            ),
        },
        optional={"timestamp": JSON_LEAVES},
    ).map(lambda r: json.dumps(r, allow_nan=True)),
    JSON_VALUES.map(lambda v: json.dumps(v, allow_nan=True)),
    st.text(ANY_CHAR, max_size=60),
    st.sampled_from(["", " ", "{", "[" * 50_000, '{"type": "message"}', "\r", "\u2028", "\x00"]),
)


def check_transcript(raw: str) -> None:
    parsed = parse_session_jsonl(raw)
    lines = parsed.content.split("\n") if parsed.content else []
    assert len(lines) == len(parsed.line_map) == len(parsed.timestamps)
    assert list(parsed.line_map) == sorted(set(parsed.line_map))
    assert all(1 <= n <= raw.count("\n") + 1 for n in parsed.line_map)
    assert all(line.startswith(("User: ", "Assistant: ")) for line in lines)
    parsed.content.encode("utf-8")  # no lone surrogates reach the index
    COUNTS["transcripts fuzzed"] += 1


@settings(FUZZ, max_examples=250)
@given(records=st.lists(RECORDS, max_size=12), newline=st.sampled_from(["\n", "\r\n"]))
def test_session_parser_never_raises(records: list[str], newline: str) -> None:
    check_transcript(newline.join(records))


def test_hostile_transcripts_index_end_to_end(tmp_path: Path) -> None:
    """Seeded hostile transcripts go through the whole indexer; line numbers stay in range."""
    rng = random.Random(5150)
    workspace = tmp_path / "ws"
    write_files(workspace, {"MEMORY.md": "# Memory\n\nmeadow\n"})
    sessions = workspace / "sessions"
    sessions.mkdir()
    pieces = [
        '{"type": "message", "message": {"role": "user", "content": "meadow \\ud800 talk"}}',
        '{"type": "message", "message": {"role": "assistant", "content": [{"type": "text",'
        ' "text": "reply\\u2028with\\u0000nul"}]}}',
        "[" * 20_000,
        "not json at all",
        '{"type": "message", "message": {"role": "user", "content": 5}}',
        '{"type": "message", "message": {"role": "user", "content": "' + "long " * 3000 + '"}}',
        "\x00\x01\x02",
    ]
    line_counts = {}
    for number in range(12):
        raw = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 15)))
        name = f"s{number}.jsonl"
        (sessions / name).write_text(raw, encoding="utf-8", errors="surrogatepass")
        line_counts[f"sessions/{name}"] = raw.count("\n") + 1
        check_transcript(raw)
    manager = build_manager(
        workspace, make_settings(sources=["memory", "sessions"]), make_registry()
    )
    try:
        manager.sync()
        for hit in manager.search("meadow talk reply long", min_score=0.0, max_results=50):
            if hit.source == "sessions":
                assert 1 <= hit.start_line <= hit.end_line <= line_counts[hit.path]
    finally:
        manager.close()


# -- read paths ------------------------------------------------------------------------------

SECRET = "OUTSIDE-SECRET-7d1f"


@pytest.fixture(scope="module")
def read_setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("paths")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# {SECRET}\n", encoding="utf-8")
    (outside / "memory").mkdir()
    (outside / "memory" / "secret.md").write_text(f"{SECRET}\n", encoding="utf-8")
    ws = root / "ws"
    long_name = "l" * 250 + ".md"
    write_files(
        ws,
        {
            "MEMORY.md": "# Memory\nline two\nline three\n",
            "memory/a.md": "alpha\nbeta\n",
            "memory/sub/b.md": "bravo\n",
            f"memory/{long_name}": "long name\n",
            "memory/é.md": "accent\n",
            "memory/back\\slash.md": "backslash name\n",
            "notes.md": "not memory\n",
            "extra/e.md": "extra file\n",
        },
    )
    (ws / "memory" / "dir.md").mkdir()
    os.mkfifo(ws / "memory" / "fifo.md")
    os.symlink(outside / "secret.md", ws / "memory" / "link-out.md")
    os.symlink(outside, ws / "memory" / "linkdir")
    os.symlink(ws / "memory" / "a.md", ws / "memory" / "link-in.md")
    os.symlink(ws / "memory" / "loop", ws / "memory" / "loop")
    os.symlink(outside / "secret.md", ws / "extra" / "out.md")
    os.symlink(outside, ws / "extra" / "outdir")
    os.symlink(outside / "secret.md", ws / "DREAMS.md")
    # A second workspace whose memory directory itself is a symlink to the outside.
    ws2 = root / "ws2"
    ws2.mkdir()
    os.symlink(outside / "memory", ws2 / "memory")
    os.symlink(outside / "secret.md", ws2 / "MEMORY.md")
    managers = [
        build_manager(ws, make_settings(extra_paths=["extra"]), make_registry()),
        build_manager(ws2, make_settings(), make_registry()),
    ]
    allowed = [
        os.path.join(os.path.realpath(w), name)
        for w in (ws, ws2)
        for name in ("MEMORY.md", "memory.md", "DREAMS.md")
    ]
    allowed += [os.path.join(os.path.realpath(ws), d) + os.sep for d in ("memory", "extra")]
    yield {
        "managers": managers,
        "allowed": allowed,
        "components": [
            "..",
            ".",
            "",
            "memory",
            "MEMORY.md",
            "DREAMS.md",
            "memory.md",
            "a.md",
            "sub",
            "b.md",
            "link-out.md",
            "linkdir",
            "secret.md",
            "link-in.md",
            "loop",
            "dir.md",
            "fifo.md",
            "outside",
            "extra",
            "e.md",
            "out.md",
            "outdir",
            "notes.md",
            "ws",
            "ws2",
            long_name,
            "x" * 300 + ".md",
            "back\\slash.md",
            "..\\..\\outside\\secret.md",
            "memory\\a.md",
            "é.md",
            "~",
            "%2e%2e",
            "\x00",
            "\u202e",
            "\udcff",
            str(outside),
            str(outside / "secret.md"),
            str(ws / "memory" / "a.md"),
            "/etc/passwd",
            "/",
        ],
    }
    for manager in managers:
        manager.close()


def read_path(setup: dict[str, Any], path: str, from_line: Any, lines: Any) -> None:
    opened: list[str] = []
    original = paths_module.open_regular_file

    def recording(real: Path) -> Any:
        opened.append(os.path.realpath(real))
        return original(real)

    paths_module.open_regular_file = recording  # type: ignore[assignment]
    try:
        for manager in setup["managers"]:
            try:
                result = manager.read_file(path, from_line=from_line, lines=lines)
                assert SECRET not in result.text
            except PathNotAllowedError:
                pass
            payload = execute_tool(
                "memory_get", {"path": path, "from_line": from_line, "lines": lines}, manager
            )
            json.dumps(payload)
            assert SECRET not in payload.get("text", "")
    finally:
        paths_module.open_regular_file = original  # type: ignore[assignment]
    for real in opened:
        assert any(real == a or real.startswith(a) for a in setup["allowed"]), real
    COUNTS["paths tried"] += 1


PATH_NUMBERS = st.one_of(st.none(), st.integers(min_value=-5, max_value=10**12))


@settings(FUZZ, max_examples=400)
@given(data=st.data(), from_line=PATH_NUMBERS, lines=PATH_NUMBERS)
def test_read_paths_never_escape(
    read_setup: dict[str, Any], data: st.DataObject, from_line: int | None, lines: int | None
) -> None:
    parts = data.draw(st.lists(st.sampled_from(read_setup["components"]), min_size=1, max_size=7))
    separator = data.draw(st.sampled_from(["/", "//", "\\", "/./"]))
    path = separator.join(parts)
    if data.draw(st.booleans()):
        path = data.draw(st.sampled_from(["", "/", "./", " ", "\t"])) + path
    read_path(read_setup, path, from_line, lines)


@settings(FUZZ, max_examples=150)
@given(path=st.text(ANY_CHAR, max_size=60))
def test_read_arbitrary_text_paths(read_setup: dict[str, Any], path: str) -> None:
    read_path(read_setup, path, None, None)


def test_read_very_long_paths(read_setup: dict[str, Any]) -> None:
    for path in (
        "memory/" + "a/" * 3000 + "x.md",
        "memory/" + "../" * 2000 + "secret.md",
        "memory/" + "y" * 5000 + ".md",
        "memory/" + "z" * 255 + ".md",
        "memory/" + "é" * 200 + ".md",
    ):
        read_path(read_setup, path, None, None)
