"""``memwell.plugin``: the one import for plugin authors, light to import, complete."""

from __future__ import annotations

import subprocess
import sys

import memwell.plugin as mw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.contract.api_version import PLUGIN_API_VERSION, _simple_range_contains, api_mismatch
from memwell.contract.descriptors import BackendContext
from memwell.contract.errors import PluginError
from pydantic import BaseModel


def test_every_exported_name_resolves() -> None:
    missing = [name for name in mw.__all__ if not hasattr(mw, name)]
    assert missing == []
    assert mw.PLUGIN_API_VERSION == PLUGIN_API_VERSION
    with pytest.raises(AttributeError):
        _ = mw.NotAThing  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", ["memwell.plugin", "memwell.plugin_sdk"])
def test_importing_the_door_loads_nothing_heavy(module: str) -> None:
    heavy = [
        "numpy",
        "memwell.providers.remote",
        "memwell.agent.tools",
        "memwell.runtime.factory",
        "memwell.cli.main",
    ]
    code = f"import sys, {module}; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_sdk_resolves_every_name_to_the_core_object() -> None:
    from memwell import plugin_sdk as sdk
    from memwell.providers import remote, retry
    from memwell.sources import file_scan
    from memwell.textgen import remote as textgen_remote
    from memwell.util import blas, lazy_import, sqlite_errors

    missing = [name for name in sdk.__all__ if not hasattr(sdk, name)]
    assert missing == []
    assert sdk.sqlite_errors is sqlite_errors
    assert sdk.BatchingRemoteProvider is remote.BatchingRemoteProvider
    assert sdk.RetryPolicy is retry.RetryPolicy
    assert sdk.TEXTGEN_WHAT == textgen_remote.WHAT
    assert sdk.single_blas_thread is blas.single_blas_thread
    assert sdk.lazy_logger is lazy_import.lazy_logger
    assert mw.file_scan_search is file_scan.scan_memory_files  # renamed: two scans in one door
    with pytest.raises(AttributeError, match="plugin_sdk"):
        _ = sdk.NotAThing


def test_what_a_backend_uses_today_is_there() -> None:
    for name in ("Candidate", "CHUNKER_VERSION", "chunk_markdown", "rank_candidates", "hookimpl"):
        assert name in mw.__all__


class _Cfg(BaseModel):
    size: int = 3


class _Other(BaseModel):
    pass


def _ctx(config: BaseModel | None) -> BackendContext:
    return BackendContext(
        workspace=None,  # type: ignore[arg-type]
        settings=None,  # type: ignore[arg-type]
        embeddings=None,  # type: ignore[arg-type]
        registry=None,  # type: ignore[arg-type]
        plugin_config=config,
    )


def test_plugin_settings_helper() -> None:
    assert mw.plugin_settings(_ctx(None), _Cfg).size == 3
    assert mw.plugin_settings(_ctx(_Cfg(size=7)), _Cfg).size == 7
    with pytest.raises(PluginError, match="expected _Cfg"):
        mw.plugin_settings(_ctx(_Other()), _Cfg)


def test_api_mismatch_messages() -> None:
    assert api_mismatch(None) is None
    assert api_mismatch(f"=={PLUGIN_API_VERSION}") is None
    message = api_mismatch(">=99")
    assert message is not None and PLUGIN_API_VERSION in message and ">=99" in message
    assert "not a version range" in (api_mismatch("one point oh") or "")


_VERSIONS = st.lists(st.integers(0, 3), min_size=1, max_size=3).map(
    lambda parts: ".".join(map(str, parts))
)
_CLAUSES = st.tuples(st.sampled_from([">=", "<=", "==", "!=", "<", ">"]), _VERSIONS)


@settings(max_examples=300, deadline=None)
@given(clauses=st.lists(_CLAUSES, min_size=1, max_size=3), space=st.sampled_from(["", " "]))
def test_plain_ranges_are_decided_as_packaging_decides_them(
    clauses: list[tuple[str, str]], space: str
) -> None:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    declared = ",".join(f"{space}{op}{space}{version}" for op, version in clauses)
    expected = Version(PLUGIN_API_VERSION) in SpecifierSet(declared)
    assert _simple_range_contains(declared) is expected
    assert (api_mismatch(declared) is None) is expected


def test_other_forms_are_left_to_packaging() -> None:
    for declared in ("~=1.0", "==1.*", ">=1.0rc1", "===1.0", ""):
        assert _simple_range_contains(declared) is None
    assert api_mismatch("~=1.0") is None and api_mismatch("==1.*") is None
    assert api_mismatch("~=2.0") is not None


def test_every_first_party_plugin_declares_the_api_it_supports() -> None:
    from memwell.registry.plugins import PluginRegistry

    registry = PluginRegistry()
    registry.load_all()
    first_party = {
        n: i for n, i in registry.infos.items() if (i.distribution or "").startswith("memwell")
    }
    assert {"builtin", "local"} <= set(first_party)
    assert {n: i.api for n, i in first_party.items()} == {n: ">=1.0,<2" for n in first_party}
    assert all(i.status == "loaded" for i in first_party.values())
