from __future__ import annotations

import math
import re
import sqlite3
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.retrieval.boolean import parse_boolean
from memwell.retrieval.cjk import is_cjk_char, segment_for_fts, segment_for_index
from memwell.retrieval.fts_query import (
    MAX_BOOLEAN_GROUPS,
    MAX_TERMS,
    FtsQuery,
    bm25_rank_to_score,
    boost_looking_for,
    boost_terms,
    boosted_score,
    build_fts_query,
    chunk_terms,
    fts_text_and_terms,
    keyword_boost,
    query_terms,
)
from memwell.retrieval.keywords import tokenize

FTS5_SYNTAX = [
    '"',
    '""',
    "NEAR(",
    "NEAR(a b, 2)",
    "*",
    "^",
    "col:",
    "text:",
    "{text}:",
    "(",
    ")",
    "AND",
    "OR",
    "NOT",
    "-",
    "+",
    ":",
    "\x00",
    "\x1b",
    "\n",
    "😀",
    "金银价格",
    "北京",
    "カ",
    "서울",
    "_",
    "%",
    "\\",
    "'",
    " ",
    "a",
    "abc",
]
HOSTILE = st.one_of(
    st.text(),
    st.lists(st.one_of(st.sampled_from(FTS5_SYNTAX), st.text(max_size=4)), max_size=30).map(
        "".join
    ),
)


def _quoted_terms(joiner: str) -> re.Pattern[str]:
    return re.compile(f'"[^"]+"(?: {joiner} "[^"]+")*')


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    conn.execute("CREATE VIRTUAL TABLE g USING fts5(text, tokenize='trigram')")
    conn.execute(
        "INSERT INTO t(text) VALUES ('hello world'), (?)", (segment_for_index("金银价格"),)
    )
    conn.execute("INSERT INTO g(text) VALUES ('hello world'), ('金银价格 a_b')")
    yield conn
    conn.close()


def _search(conn: sqlite3.Connection, table: str, fq: FtsQuery) -> list[int]:
    clauses = ([f"{table} MATCH ?"] if fq.match else []) + ["text LIKE ? ESCAPE '\\'"] * len(
        fq.like_terms
    )
    params = ([fq.match] if fq.match else []) + list(fq.like_terms)
    sql = f"SELECT rowid FROM {table} WHERE {' AND '.join(clauses)} ORDER BY rowid"
    return [row[0] for row in conn.execute(sql, params)]


def _reindex(conn: sqlite3.Connection, table: str, text: str) -> None:
    conn.execute(f"DELETE FROM {table}")
    conn.execute(f"INSERT INTO {table}(rowid, text) VALUES (1, ?)", (text,))


# --- spec cases --------------------------------------------------------------------------------


def test_hello_world() -> None:
    assert build_fts_query("hello world", mode="and") == FtsQuery('"hello" AND "world"', ())
    assert build_fts_query("hello world") == FtsQuery('"hello" OR "world"', ())


def test_tokens_split_on_punctuation_keep_underscore() -> None:
    fq = build_fts_query("FOO_bar baz-1", mode="and")
    assert fq == FtsQuery('"foo_bar" AND "baz" AND "1"', ())


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "!?*()", '"""', "___", "😀"])
def test_nothing_to_search_gives_none(query: str) -> None:
    assert build_fts_query(query) is None
    assert build_fts_query(query, tokenizer="trigram") is None


def test_cjk_run_becomes_bigrams_under_unicode61() -> None:
    fq = build_fts_query("金银价格", mode="and")
    assert fq == FtsQuery('"金银" AND "银价" AND "价格"', ())
    assert build_fts_query("金") == FtsQuery('"金"', ())
    assert build_fts_query("API接口") == FtsQuery('"api" OR "接口"', ())


def test_trigram_short_cjk_becomes_like_terms_long_uses_match() -> None:
    assert build_fts_query("北京", tokenizer="trigram") == FtsQuery(None, ("%北京%",))
    assert build_fts_query("금", tokenizer="trigram") == FtsQuery(None, ("%금%",))
    assert build_fts_query("金银价格", tokenizer="trigram") == FtsQuery('"金银价格"', ())


def test_trigram_short_ascii_only_in_like_terms() -> None:
    fq = build_fts_query("ab abc", tokenizer="trigram")
    assert fq == FtsQuery('"abc"', ("%ab%",))


def test_like_terms_escape_wildcards() -> None:
    assert build_fts_query("a_", tokenizer="trigram") == FtsQuery(None, ("%a\\_%",))


def test_trigram_long_terms_are_cut() -> None:
    fq = build_fts_query("x" * 10_000, tokenizer="trigram")
    assert fq is not None and fq.match == '"' + "x" * 64 + '"'


def test_stopwords_dropped_and_a_stopword_only_query_searches_nothing() -> None:
    assert build_fts_query("the api of it") == FtsQuery('"api"', ())
    assert build_fts_query("the of") is None
    assert build_fts_query("what is it", tokenizer="trigram") is None
    assert build_fts_query("the of", drop_stopwords=False) == FtsQuery('"the" OR "of"', ())
    assert build_fts_query("the api", drop_stopwords=False) == FtsQuery('"the" OR "api"', ())
    assert build_fts_query("的 北京", tokenizer="trigram") == FtsQuery(None, ("%北京%",))


def test_terms_are_deduplicated_and_lowercased() -> None:
    assert build_fts_query("API api Api 金银 金银") == FtsQuery('"api" OR "金银"', ())


def test_terms_capped_at_the_first_64() -> None:
    words = [f"w{i:03d}" for i in range(200)]
    fq = build_fts_query(" ".join(words))
    assert fq is not None and fq.match is not None
    terms = fq.match.split(" OR ")
    assert len(terms) == MAX_TERMS
    assert terms[0] == '"w000"' and terms[-1] == f'"w{MAX_TERMS - 1:03d}"'


def test_unknown_mode_or_tokenizer_is_rejected() -> None:
    with pytest.raises(ValueError, match="mode"):
        build_fts_query("x", mode="near")
    with pytest.raises(ValueError, match="tokenizer"):
        build_fts_query("x", tokenizer="porter")


# --- real SQLite -------------------------------------------------------------------------------


def test_raw_user_syntax_would_break_fts5(db: sqlite3.Connection) -> None:
    # Guards the safety property below: this table really parses FTS5 syntax.
    with pytest.raises(sqlite3.OperationalError):
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", ('NEAR("a" col:x',)).fetchall()


@given(HOSTILE)
@settings(max_examples=300, deadline=None)
def test_any_query_is_safe_for_fts5(db: sqlite3.Connection, query: str) -> None:
    for tokenizer, table in (("unicode61", "t"), ("trigram", "g")):
        for mode, joiner in (("or", "OR"), ("and", "AND")):
            fq = build_fts_query(query, tokenizer=tokenizer, mode=mode)
            if fq is None:
                continue
            assert fq.match is not None or fq.like_terms
            if fq.match is not None and not parse_boolean(query):
                assert _quoted_terms(joiner).fullmatch(fq.match)
                assert fq.match.count('"') <= 2 * MAX_TERMS
            _search(db, table, fq)


def test_huge_hostile_query_is_bounded_and_safe(db: sqlite3.Connection) -> None:
    query = " ".join(f'NEAR(w{i}* "x{i} col:y{i} ^z{i} -(' for i in range(20_000))
    for tokenizer, table in (("unicode61", "t"), ("trigram", "g")):
        fq = build_fts_query(query, tokenizer=tokenizer)
        assert fq is not None and fq.match is not None
        assert fq.match.count(" OR ") + 1 + len(fq.like_terms) == MAX_TERMS
        _search(db, table, fq)


def test_chinese_found_only_with_segmentation(db: sqlite3.Connection) -> None:
    db.execute("CREATE VIRTUAL TABLE raw USING fts5(text)")
    db.execute("CREATE VIRTUAL TABLE seg USING fts5(text)")
    doc = "今年金银价格大涨，北京的会议讨论了投资方案"
    _reindex(db, "raw", doc)
    _reindex(db, "seg", segment_for_index(doc))
    for query in ("金银价格", "北京", "投资方案", "价"):
        fq = build_fts_query(query, mode="and")
        assert fq is not None
        assert _search(db, "seg", fq) == [1], query
        assert _search(db, "raw", fq) == [], query
    miss = build_fts_query("上海", mode="and")
    assert miss is not None and _search(db, "seg", miss) == []


def test_trigram_short_and_long_cjk_are_found(db: sqlite3.Connection) -> None:
    for query in ("金银", "金银价格", "价", "a_b", "hello"):
        fq = build_fts_query(query, tokenizer="trigram")
        assert fq is not None
        assert _search(db, "g", fq), query
    # "_" is escaped: "a_" must not match "ab".
    db.execute("CREATE VIRTUAL TABLE g2 USING fts5(text, tokenize='trigram')")
    _reindex(db, "g2", "ab")
    fq = build_fts_query("a_", tokenizer="trigram")
    assert fq is not None and _search(db, "g2", fq) == []


ASCII_CJK_CHARS = 'abcXYZ09_ ,.-"*()北京金银价格我爱カナー서울에'
# Includes decomposed accents: FTS5 strips them and joins the word, the query must do the same.
WORDY = st.lists(st.sampled_from([*ASCII_CJK_CHARS, "é", "É", "ß", "e\u0301", "A\u0308"])).map(
    "".join
)
ASCII_CJK = st.text(alphabet=st.sampled_from(list(ASCII_CJK_CHARS)))


@given(WORDY)
@settings(max_examples=200, deadline=None)
def test_segmented_document_is_found_by_its_own_text(db: sqlite3.Connection, doc: str) -> None:
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS prop USING fts5(text)")
    _reindex(db, "prop", segment_for_index(doc))
    fq = build_fts_query(doc, mode="and", drop_stopwords=False)
    if fq is not None and not parse_boolean(doc).must_not:  # "a -a" excludes itself
        assert _search(db, "prop", fq) == [1]


@given(ASCII_CJK)
@settings(max_examples=200, deadline=None)
def test_trigram_document_is_found_by_its_own_text(db: sqlite3.Connection, doc: str) -> None:
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS gprop USING fts5(text, tokenize='trigram')")
    _reindex(db, "gprop", doc)
    fq = build_fts_query(doc, tokenizer="trigram", mode="and", drop_stopwords=False)
    if fq is not None and not parse_boolean(doc).must_not:  # "-a00 a00" excludes itself
        assert _search(db, "gprop", fq) == [1]


# --- bm25 --------------------------------------------------------------------------------------


def test_bm25_fixed_points() -> None:
    assert bm25_rank_to_score(0.0) == 1.0
    assert bm25_rank_to_score(1.0) == 0.5
    assert bm25_rank_to_score(-1.0) == 0.5
    assert bm25_rank_to_score(math.nan) == 0.001
    assert bm25_rank_to_score(math.inf) == 0.001
    assert bm25_rank_to_score(-math.inf) == 0.001


def test_bm25_negative_ranks_keep_their_order() -> None:
    scores = [bm25_rank_to_score(r) for r in (-4.2, -2.1, -0.5)]
    assert scores == sorted(scores, reverse=True)


@given(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
)
@settings(max_examples=200, deadline=None)
def test_bm25_monotonic_within_each_sign(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    for score in (bm25_rank_to_score(lo), bm25_rank_to_score(hi)):
        assert 0.0 <= score <= 1.0
    if hi < 0:  # more negative is better
        assert bm25_rank_to_score(lo) >= bm25_rank_to_score(hi)
    if lo >= 0:  # positive ranks: larger is worse
        assert bm25_rank_to_score(lo) >= bm25_rank_to_score(hi)


# --- fallback boost ----------------------------------------------------------------------------


def test_keyword_boost_formula() -> None:
    # coverage 1/2, overlap 1 of 2 text tokens, no path hit, length 11/160.
    expected = 0.45 * 0.5 + 0.2 * 0.5 + 11 / 160
    assert keyword_boost(query_terms("alpha beta"), "alpha gamma", "notes.md") == pytest.approx(
        expected
    )


def test_keyword_boost_path_bonus_and_length_cap() -> None:
    with_path = keyword_boost(query_terms("alpha"), "alpha", "memory/Alpha.md")
    without = keyword_boost(query_terms("alpha"), "alpha", "memory/notes.md")
    assert with_path - without == pytest.approx(0.18)
    assert keyword_boost(query_terms("zzz"), "x" * 10_000, "a.md") == pytest.approx(0.18)


def test_keyword_boost_repeated_query_tokens_not_overweighted() -> None:
    text, path = "alpha beta gamma", "memory/alpha.md"
    assert keyword_boost(query_terms("alpha alpha ALPHA"), text, path) == keyword_boost(
        query_terms("alpha"), text, path
    )


def test_keyword_boost_capped_at_one() -> None:
    assert keyword_boost(query_terms("alpha beta"), "alpha beta " * 20, "alpha-beta.md") == 1.0


def test_keyword_boost_matches_cjk_inside_a_run() -> None:
    assert keyword_boost(query_terms("北京"), "我爱北京天安门", "x.md") > keyword_boost(
        query_terms("上海"), "我爱北京天安门", "x.md"
    )


@given(st.text(max_size=40), st.text(max_size=80), st.text(max_size=20))
@settings(max_examples=200, deadline=None)
def test_keyword_boost_in_unit_interval(query: str, text: str, path: str) -> None:
    assert 0.0 <= keyword_boost(query_terms(query), text, path) <= 1.0


def _boost_by_sets(query: str, text: str, path: str) -> float:
    """The boost as first written: the candidate text tokenised into a set at search time
    (normalised first, as the index normalises it: ``"か\u3099"`` is ``"が"``, not ``"か"``)."""
    terms = query_terms(query)
    normalised = unicodedata.normalize("NFC", text)
    text_terms = {t for t in tokenize(segment_for_index(normalised)) if t.strip("_")}
    overlap = len(terms & text_terms)
    coverage = overlap / len(terms) if terms else 0.0
    density = overlap / len(text_terms) if text_terms else 0.0
    path_hits = sum(1 for term in terms if term in path.lower())
    return min(1.0, 0.45 * coverage + 0.2 * density + 0.18 * path_hits + min(len(text) / 160, 0.18))


# A compatibility ideograph, decomposed Hangul and a decomposed kana: NFC changes them.
_MIXED = st.text(alphabet="ab _-.北京上海爱我é1\n\uf900\u1100\u1161\u304b\u3099", max_size=60)


@given(_MIXED, _MIXED, st.text(alphabet="ab北/.md", max_size=12))
@settings(max_examples=300, deadline=None)
def test_keyword_boost_from_stored_terms_equals_the_set_formula(
    query: str, text: str, path: str
) -> None:
    stored = chunk_terms(text)
    assert all(term and not term.isspace() for term in stored.words.split(" ") if stored.words)
    assert keyword_boost(query_terms(query), text, path, stored) == pytest.approx(
        _boost_by_sets(query, text, path)
    )


@given(
    _MIXED,
    _MIXED,
    st.text(alphabet="ab北/.md", max_size=12),
    st.floats(min_value=0.0, max_value=1.0),
)
@settings(max_examples=300, deadline=None)
def test_a_boosted_score_is_the_capped_sum_whether_or_not_it_looks_for_n_grams(
    query: str, text: str, path: str, text_score: float
) -> None:
    looking = boost_terms(query_terms(query))
    stored = chunk_terms(text)
    assert boosted_score(looking, text_score, text, path, stored) == min(
        1.0, text_score + boost_looking_for(looking, text, path, stored)
    )


def test_a_boosted_score_skips_the_n_grams_only_when_the_cap_is_reached() -> None:
    looking = boost_terms(query_terms("北京 上海"))
    text = "北京" * 100  # long enough for the whole length boost (0.18)

    class Text(str):
        """A chunk text that records whether the n-grams were looked for in it."""

        scanned = False

        def __contains__(self, key: object) -> bool:
            Text.scanned = True
            return super().__contains__(key)  # type: ignore[operator]

    assert boosted_score(looking, 0.9, Text(text), "memory/x.md") == 1.0
    assert not Text.scanned
    assert boosted_score(looking, 0.5, Text(text), "memory/x.md") < 1.0
    assert Text.scanned


def test_chunk_terms_are_distinct_in_first_seen_order() -> None:
    assert chunk_terms("Beta alpha beta __ 北京") == ("beta alpha", 5)
    assert chunk_terms("api接口v2 北京北") == ("api v2", 9)  # and 接 口 接口 北 京 北京 京北
    assert chunk_terms("") == ("", 0)


def test_keeping_drops_terms_but_never_empties_the_query() -> None:
    fq = build_fts_query("alpha beta gamma")
    assert fq is not None and fq.terms == ("alpha", "beta", "gamma")
    assert fq.keeping({"beta"}).match == '"beta"'
    assert fq.keeping(set()).match == fq.match
    assert build_fts_query("alpha beta", mode="and").keeping({"alpha"}).match == '"alpha"'  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("ab_ _Z中文字\u3042\n.\u1100\u1161\uf900e\u0301İΣー\ufada")),
        max_size=40,
    )
)
def test_chunk_terms_are_the_distinct_tokens_without_underscore_only_ones(text: str) -> None:
    """The index-time terms: every distinct token of the text normalised as a query is (NFC,
    lowercase) and then segmented, in order, except those FTS5 cannot match (underscores
    only); with or without an underscore anywhere. Decomposed Hangul, a compatibility
    ideograph and a decomposed accent are in the alphabet: NFC changes them; a capital sigma
    lowercases by its neighbours (ー is case-ignorable), and U+FADA is an unassigned code point
    in a CJK block. The FTS text is segment_for_fts's of the NFC text."""
    normalised = unicodedata.normalize("NFC", text).lower()
    expected = [t for t in dict.fromkeys(tokenize(segment_for_index(normalised))) if t.strip("_")]
    words = [t for t in expected if not any(map(is_cjk_char, t))]
    assert chunk_terms(text) == (" ".join(words), len(expected))
    assert fts_text_and_terms(text) == (
        segment_for_fts(unicodedata.normalize("NFC", text)),
        chunk_terms(text),
    )


# --- +must -must_not as an FTS5 boolean query ------------------------------------------------


def test_boolean_operators_become_and_and_not() -> None:
    fq = build_fts_query("deploy checklist +staging -friday")
    assert fq is not None
    assert fq.match == '(("deploy" OR "checklist" OR "staging") AND ("staging")) NOT ("friday")'
    assert fq.terms == ("deploy", "checklist", "staging")  # the excluded word is not looked for
    assert build_fts_query('+"smoke tests" -"friday night"') == FtsQuery(
        '(("smoke" OR "tests") AND ("smoke" AND "tests")) NOT ("friday" AND "night")', ()
    )
    assert build_fts_query("+the") == FtsQuery('("the")', ())  # a required stop word stays
    assert build_fts_query("-friday") is None  # FTS5 has no bare NOT: the filter alone
    assert build_fts_query("e-mail C++ -3") == FtsQuery('"mail" OR "c" OR "3"', ())


def test_pruning_keeps_the_required_and_excluded_groups() -> None:
    fq = build_fts_query("deploy checklist +staging -friday")
    assert fq is not None
    kept = fq.keeping({"checklist"})
    assert kept.match == '(("checklist") AND ("staging")) NOT ("friday")'


def test_trigram_short_required_terms_are_like_terms_short_excluded_ones_left_out() -> None:
    fq = build_fts_query("deploy +ab -cd -friday", tokenizer="trigram")
    assert fq == FtsQuery('(("deploy")) NOT ("friday")', ("%ab%",))


@pytest.fixture(scope="module")
def porter() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE p USING fts5(text, tokenize='porter unicode61 remove_diacritics 2')"
    )
    docs = [
        "deploy checklist for staging",  # 1
        "deploy checklist for production on friday",  # 2
        "deploy to staging on friday",  # 3
        "smoke tests run nightly",  # 4
        "staging smoke tests",  # 5
    ]
    conn.executemany("INSERT INTO p(rowid, text) VALUES (?, ?)", enumerate(docs, start=1))
    yield conn
    conn.close()


@pytest.mark.parametrize(
    ("query", "rows"),
    [
        ("deploy checklist", [1, 2, 3]),
        ("deploy checklist +staging", [1, 3, 5]),  # the free text is optional
        ("deploy checklist +staging -friday", [1, 5]),
        ("deploy -friday", [1]),
        ('tests +"smoke tests" -staging', [4]),
        ("+staging +smoke", [5]),
    ],
)
def test_boolean_queries_select_the_rows_fts5_should(
    porter: sqlite3.Connection, query: str, rows: list[int]
) -> None:
    fq = build_fts_query(query)
    assert fq is not None
    assert _search(porter, "p", fq) == rows


@given(
    should=st.text(max_size=30),
    must=st.lists(HOSTILE, max_size=40),
    must_not=st.lists(HOSTILE, max_size=40),
)
@settings(max_examples=200, deadline=None)
def test_any_boolean_query_is_safe_and_bounded_for_fts5(
    db: sqlite3.Connection, should: str, must: list[str], must_not: list[str]
) -> None:
    words = [f'+"{w.replace(chr(34), "")}"' for w in must] + [
        f'-"{w.replace(chr(34), "")}"' for w in must_not
    ]
    query = " ".join([should, *words])
    for tokenizer, table in (("unicode61", "t"), ("trigram", "g")):
        fq = build_fts_query(query, tokenizer=tokenizer)
        if fq is None:
            continue
        assert len(fq.must) <= MAX_BOOLEAN_GROUPS and len(fq.must_not) <= MAX_BOOLEAN_GROUPS
        _search(db, table, fq)
