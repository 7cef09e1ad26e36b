"""Layered configuration: defaults, precedence, and errors that name the key and the source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from config_helpers import tiny_backend_registry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwell.contract.config import MemwellSettings, load_settings
from memwell.contract.errors import ConfigError
from memwell.registry.plugins import PluginRegistry
from pydantic import BaseModel, ConfigDict, Field


class TinyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    depth: int = Field(3, ge=1)
    label: str = "x"


def _tiny_registry() -> PluginRegistry:
    return tiny_backend_registry(TinyConfig)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def no_user(tmp_path: Path) -> Path:
    return tmp_path / "no-user-config.toml"


def load(ws: Path | None, no_user: Path, **kw: Any) -> MemwellSettings:
    kw.setdefault("environ", {})
    kw.setdefault("user_config", no_user)
    return load_settings(ws, **kw)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- defaults


def test_reference_defaults(no_user: Path) -> None:
    s = load(None, no_user)
    assert s == MemwellSettings()
    assert (s.chunking.tokens, s.chunking.overlap) == (400, 80)
    assert s.query.max_results == 6
    assert s.query.min_score == pytest.approx(0.35)
    h = s.query.hybrid
    assert h.enabled is True
    assert (h.vector_weight, h.text_weight) == (pytest.approx(0.7), pytest.approx(0.3))
    assert h.candidate_multiplier == 4
    # memwell departs here: MMR on at 0.85 (docs/quality.md, issue 43)
    assert h.mmr.enabled is True and h.mmr.lambda_ == pytest.approx(0.85)
    assert h.temporal_decay.enabled is False
    assert h.temporal_decay.half_life_days == pytest.approx(30.0)
    assert s.cache.enabled is True and s.cache.max_entries is None
    assert s.remote.batch.enabled is False
    assert s.sync.watch_debounce_ms == 1500
    assert s.store.fts.tokenizer == "unicode61"
    assert (s.backend, s.provider, s.fallback) == ("builtin", "auto", "none")
    assert s.sources == ["memory"]
    assert s.index_dir == ".memwell"
    assert s.keyword_only is False


# ---------------------------------------------------------------- precedence


def test_precedence_user_workspace_env_overrides(ws: Path, tmp_path: Path) -> None:
    user = write(
        tmp_path / "user.toml",
        "model = 'user-model'\nfallback = 'user-fb'\nbackend = 'user-be'\n"
        "[query]\nmax_results = 1\nmin_score = 0.1\n[chunking]\ntokens = 100\n",
    )
    write(
        ws / "memwell.toml",
        "fallback = 'ws-fb'\nbackend = 'ws-be'\n[query]\nmax_results = 2\nmin_score = 0.2\n",
    )
    env = {"MEMWELL_BACKEND": "env-be", "MEMWELL_QUERY__MAX_RESULTS": "3"}
    s = load_settings(ws, user_config=user, environ=env, overrides={"query": {"max_results": 4}})
    assert s.model == "user-model"  # only the user config sets it
    assert s.chunking.tokens == 100  # nested tables merge across layers
    assert s.fallback == "ws-fb"  # workspace beats user
    assert s.query.min_score == pytest.approx(0.2)
    assert s.backend == "env-be"  # env beats workspace
    assert s.query.max_results == 4  # overrides beat env


def test_nested_tables_merge_not_replace(ws: Path, no_user: Path) -> None:
    write(ws / "memwell.toml", "[query.hybrid]\nvector_weight = 0.6\n")
    s = load(ws, no_user, overrides={"query": {"hybrid": {"text_weight": 0.4}}})
    assert s.query.hybrid.vector_weight == pytest.approx(0.6)
    assert s.query.hybrid.text_weight == pytest.approx(0.4)
    assert s.query.hybrid.candidate_multiplier == 4


def test_config_file_replaces_workspace_file(ws: Path, no_user: Path, tmp_path: Path) -> None:
    write(ws / "memwell.toml", "model = 'from-ws'\nfallback = 'ws-fb'\n")
    other = write(tmp_path / "other.toml", "model = 'from-other'\n")
    s = load(ws, no_user, config_file=other)
    assert s.model == "from-other"
    assert s.fallback == "none"  # the workspace file was not read at all


def test_missing_config_file_is_an_error(ws: Path, no_user: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigError) as info:
        load(ws, no_user, config_file=missing)
    assert str(missing) in str(info.value)


def test_env_values_parse_json_lists_and_keep_strings(no_user: Path) -> None:
    env = {
        "MEMWELL_SOURCES": '["sessions", "memory"]',
        "MEMWELL_QUERY__HYBRID__MMR__ENABLED": "true",
        "MEMWELL_QUERY__MIN_SCORE": "0.5",
        # numeric-looking strings stay strings for str fields
        "MEMWELL_MODEL": "1234",
        "MEMWELL_REMOTE__API_KEY": "000123",
    }
    s = load(None, no_user, environ=env)
    assert s.sources == ["memory", "sessions"]
    assert s.query.hybrid.mmr.enabled is True
    assert s.query.min_score == pytest.approx(0.5)
    assert s.model == "1234"
    assert s.remote.api_key == "000123"


def test_non_config_env_vars_are_ignored(no_user: Path) -> None:
    env = {
        "MEMWELL_WORKSPACE": "/somewhere",
        "MEMWELL_LOAD_PLUGINS": "builtin",
        "MEMWELL_CONFIG": "/x.toml",
        "OTHER_VAR": "1",
    }
    assert load(None, no_user, environ=env) == MemwellSettings()


def test_user_config_defaults_to_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ws: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = tmp_path / "xdg" / "memwell" / "config.toml"
    user.parent.mkdir(parents=True)
    write(user, "model = 'xdg-model'\n")
    assert load_settings(ws, environ={}).model == "xdg-model"


# ---------------------------------------------------------------- errors name key and source


def _error(ws: Path, no_user: Path, toml: str, **kw: Any) -> ConfigError:
    path = write(ws / "memwell.toml", toml)
    with pytest.raises(ConfigError) as info:
        load(ws, no_user, **kw)
    assert str(path) in str(info.value), str(info.value)
    assert info.value.source == str(path)
    return info.value


def test_unknown_top_level_key(ws: Path, no_user: Path) -> None:
    err = _error(ws, no_user, "max_resluts = 3\n")
    assert "'max_resluts'" in str(err) and "unknown" in str(err)
    assert err.key == "max_resluts"


def test_unknown_nested_key(ws: Path, no_user: Path) -> None:
    err = _error(ws, no_user, "[query.hybrid]\nvector_wieght = 0.5\n")
    assert "'query.hybrid.vector_wieght'" in str(err)
    assert err.key == "query.hybrid.vector_wieght"


def test_ill_typed_value(ws: Path, no_user: Path) -> None:
    err = _error(ws, no_user, '[query]\nmax_results = "many"\n')
    assert "'query.max_results'" in str(err) and "invalid value" in str(err)


def test_out_of_range_min_score(ws: Path, no_user: Path) -> None:
    err = _error(ws, no_user, "[query]\nmin_score = 1.5\n")
    assert "'query.min_score'" in str(err)


def test_mmr_lambda_error_uses_the_toml_spelling(ws: Path, no_user: Path) -> None:
    err = _error(ws, no_user, "[query.hybrid.mmr]\nlambda = 2.0\n")
    assert "'query.hybrid.mmr.lambda'" in str(err)


def test_invalid_toml(ws: Path, no_user: Path) -> None:
    err = _error(ws, no_user, "[query\nmax_results = 3\n")
    assert "not valid TOML" in str(err)


def test_error_in_user_config_names_the_user_file(ws: Path, tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", "[chunking]\ntokns = 3\n")
    with pytest.raises(ConfigError) as info:
        load_settings(ws, user_config=user, environ={})
    assert str(user) in str(info.value) and "'chunking.tokns'" in str(info.value)


def test_bad_env_var_names_the_variable(no_user: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(None, no_user, environ={"MEMWELL_QUERY__MAX_RESULTS": "abc"})
    message = str(info.value)
    assert "MEMWELL_QUERY__MAX_RESULTS" in message and "'query.max_results'" in message


def test_unknown_env_key_names_the_variable(no_user: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(None, no_user, environ={"MEMWELL_NOPE": "1"})
    assert "MEMWELL_NOPE" in str(info.value) and "'nope'" in str(info.value)


def test_bad_override_is_a_config_error(no_user: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(None, no_user, overrides={"chunking": {"tokens": 0}})
    assert "'chunking.tokens'" in str(info.value)


def test_unknown_plugin_section(ws: Path, no_user: Path) -> None:
    err = _error(ws, no_user, "[backends.nope]\nx = 1\n", registry=_tiny_registry())
    assert "'backends.nope'" in str(err) and "tiny" in str(err)  # lists what is installed


def test_plugin_section_validated_by_its_model(ws: Path, no_user: Path) -> None:
    reg = _tiny_registry()
    err = _error(ws, no_user, "[backends.tiny]\ndepth = 0\n", registry=reg)
    assert "'backends.tiny.depth'" in str(err)
    err = _error(ws, no_user, "[backends.tiny]\ncolour = 'red'\n", registry=reg)
    assert "'backends.tiny.colour'" in str(err) and "unknown" in str(err)
    write(ws / "memwell.toml", "[backends.tiny]\ndepth = 5\n")
    assert load(ws, no_user, registry=reg).backends == {"tiny": {"depth": 5}}


def test_plugin_sections_unchecked_without_registry(ws: Path, no_user: Path) -> None:
    write(ws / "memwell.toml", "[backends.anything]\nx = 1\n")
    assert load(ws, no_user).backends == {"anything": {"x": 1}}


# ---------------------------------------------------------------- derived values


@pytest.mark.parametrize(("tokens", "overlap", "expected"), [(10, 80, 9), (1, 5, 0), (400, 80, 80)])
def test_overlap_clamped(no_user: Path, tokens: int, overlap: int, expected: int) -> None:
    s = load(None, no_user, overrides={"chunking": {"tokens": tokens, "overlap": overlap}})
    assert s.chunking.overlap == expected


def test_provider_none_is_keyword_only(no_user: Path) -> None:
    assert load(None, no_user, overrides={"provider": "none"}).keyword_only is True
    assert load(None, no_user, overrides={"provider": "hash"}).keyword_only is False


def test_sources_and_extra_paths_normalised(no_user: Path) -> None:
    s = load(
        None,
        no_user,
        overrides={"sources": ["sessions", "memory", "sessions"], "extra_paths": [" a ", "a", ""]},
    )
    assert s.sources == ["memory", "sessions"]
    assert s.extra_paths == ["a"]
    assert load(None, no_user, overrides={"sources": []}).sources == ["memory"]


def test_fingerprint_stable_and_sensitive(no_user: Path) -> None:
    a = load(None, no_user)
    b = load(None, no_user)
    assert a.fingerprint() == b.fingerprint()
    c = load(None, no_user, overrides={"query": {"hybrid": {"mmr": {"lambda": 0.5}}}})
    assert c.fingerprint() != a.fingerprint()
    d = load(None, no_user, overrides={"provider": "none"})
    assert d.fingerprint() != a.fingerprint()


# ---------------------------------------------------------------- property


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
_keys = st.sampled_from(
    [
        "query",
        "max_results",
        "min_score",
        "hybrid",
        "mmr",
        "lambda",
        "chunking",
        "tokens",
        "overlap",
        "provider",
        "sources",
        "backends",
        "providers",
        "remote",
        "headers",
        "batch",
        "cache",
        "max_entries",
        "bogus",
    ]
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_keys | st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(overrides=st.dictionaries(_keys, _values, max_size=5))
def test_arbitrary_overrides_succeed_or_raise_config_error(overrides: dict[str, Any]) -> None:
    try:
        s = load_settings(
            None, overrides=overrides, environ={}, user_config=Path("/nonexistent/memwell.toml")
        )
    except ConfigError as exc:
        assert str(exc)
    else:
        assert isinstance(s, MemwellSettings)
        assert s.chunking.overlap < s.chunking.tokens


@settings(max_examples=100, deadline=None)
@given(
    env=st.dictionaries(
        st.sampled_from(
            [
                "MEMWELL_QUERY__MAX_RESULTS",
                "MEMWELL_MODEL",
                "MEMWELL_SOURCES",
                "MEMWELL_REMOTE__HEADERS",
                "MEMWELL_QUERY__HYBRID__MMR__LAMBDA",
                "MEMWELL_BACKENDS__X",
                "MEMWELL_X__Y",
            ]
        ),
        st.text(max_size=12),
        max_size=4,
    )
)
def test_arbitrary_env_succeeds_or_raises_config_error(env: dict[str, str]) -> None:
    try:
        load_settings(None, environ=env, user_config=Path("/nonexistent/memwell.toml"))
    except ConfigError as exc:
        assert exc.source is not None and exc.source.startswith("environment variable MEMWELL_")


@pytest.fixture(autouse=True)
def _no_xdg_leak(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    # never read the real user's config
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty-xdg"))
    yield


def test_reflect_schedule_is_off_by_default_and_validated(ws: Path, no_user: Path) -> None:
    assert MemwellSettings().reflect.every_minutes == 0
    err = _error(ws, no_user, '[reflect]\nevery_minutes = "1h"\n')
    assert "'reflect.every_minutes'" in str(err) and "invalid value" in str(err)
    assert "'reflect.every_minutes'" in str(_error(ws, no_user, "[reflect]\nevery_minutes = -5\n"))
    assert "'reflect.evry'" in str(_error(ws, no_user, "[reflect]\nevry = 60\n"))
