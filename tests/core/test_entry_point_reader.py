"""Entry points read without importlib.metadata (issue 16: a fast start) must be exactly the
ones importlib.metadata lists: the same names, values and distributions, in every layout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.util import entry_points as ep_mod
from memwell.util.entry_points import EntryPointRef, find_entry_points


def _importlib(group: str) -> list[tuple[str, str, str | None, str | None]]:
    return sorted(
        (e.name, e.value, e.distribution, e.version) for e in ep_mod._from_importlib(group)
    )


def _ours(group: str) -> list[tuple[str, str, str | None, str | None]]:
    return sorted((e.name, e.value, e.distribution, e.version) for e in find_entry_points(group))


def _dist(root: Path, dirname: str, entry_points: str, name: str, version: str) -> None:
    info = root / dirname
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(entry_points)
    meta = "METADATA" if dirname.endswith(".dist-info") else "PKG-INFO"
    (info / meta).write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x\n\nName: body\n"
    )


@pytest.mark.parametrize("group", ["memwell", "console_scripts", "pytest11"])
def test_the_installed_environment_reads_as_importlib_metadata_reads_it(group: str) -> None:
    found = _ours(group)
    assert found == _importlib(group)
    if group == "memwell":
        assert ("builtin", "memwell_sqlite.plugin", "memwell-sqlite") in [f[:3] for f in found]


def test_layouts_duplicates_comments_and_egg_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    text = "# comment\n[memwell]\nalpha = alpha_pkg.plugin\n\n[other]\nx = y\n"
    _dist(first, "Alpha_Pkg-1.0.dist-info", text, "alpha-pkg", "1.0")
    # the same distribution later on sys.path (normalised name alpha_pkg): importlib ignores it
    _dist(second, "alpha.pkg-2.0.dist-info", "[memwell]\nalpha2 = other:thing\n", "alpha.pkg", "2")
    beta = "[memwell]\n beta = beta.mod:obj.attr [extra]\n"
    _dist(second, "beta-0.3.egg-info", beta, "beta", "0.3")
    (second / "delta-1.dist-info").mkdir()  # no entry_points.txt
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    ours = _ours("memwell")
    assert ("alpha", "alpha_pkg.plugin", "alpha-pkg", "1.0") in ours
    assert ("beta", "beta.mod:obj.attr [extra]", "beta", "0.3") in ours
    assert "alpha2" not in [e[0] for e in ours]
    assert ours == _importlib("memwell")
    # a line without "=" (importlib.metadata raises TypeError on it) is skipped, not fatal
    _dist(second, "gamma-1.dist-info", "[memwell]\nno equals\ngamma = g.plugin\n", "gamma", "1")
    assert _ours("memwell") == sorted([*ours, ("gamma", "g.plugin", "gamma", "1")])


def test_a_zip_on_sys_path_is_read_through_importlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[memwell]\nzipped = zipped.plugin\n")
        zf.writestr("zipped-1.0.dist-info/METADATA", "Name: zipped\nVersion: 1.0\n\n")
    monkeypatch.syspath_prepend(str(archive))
    assert not ep_mod._readable_here(sys.path)
    assert ("zipped", "zipped.plugin", "zipped", "1.0") in _ours("memwell")


def test_load_resolves_module_and_attribute_path() -> None:
    ref = EntryPointRef("x", "os.path:join.__name__", "g")
    assert (ref.module, ref.attr, ref.load()) == ("os.path", "join.__name__", "join")
    assert EntryPointRef("x", "json", "g").load() is sys.modules["json"]
    with pytest.raises(ValueError, match="invalid value"):
        EntryPointRef("x", "not a module!", "g").load()


_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_MODULES = st.from_regex(r"[a-z][a-z0-9_]{0,6}(\.[a-z][a-z0-9_]{0,6}){0,2}", fullmatch=True)


@settings(max_examples=25, deadline=None)
@given(
    points=st.lists(st.tuples(_NAMES, _MODULES, st.sampled_from(["memwell", "other"])), max_size=6),
    spaces=st.sampled_from(["", " ", "  "]),
)
def test_any_entry_points_file_reads_as_importlib_reads_it(
    tmp_path_factory: pytest.TempPathFactory,
    points: list[tuple[str, str, str]],
    spaces: str,
) -> None:
    root = tmp_path_factory.mktemp("site")
    lines = []
    for name, module, group in points:
        lines += [f"[{group}]", f"{spaces}{name}{spaces}={spaces}{module}:obj{spaces}", "# note"]
    _dist(root, "prop_pkg-1.0.dist-info", "\n".join(lines) + "\n", "prop-pkg", "1.0")
    saved = list(sys.path)
    sys.path.insert(0, str(root))
    try:
        assert _ours("memwell") == _importlib("memwell")
    finally:
        sys.path[:] = saved


def test_a_keyword_search_start_up_imports_no_importlib_metadata(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Notes\n\nThe amber service listens on port 8080.\n")
    code = (
        "import sys, runpy\n"
        "sys.argv = ['memwell', '--provider', 'none', '-w', sys.argv[1], 'search', 'amber port']\n"
        "try:\n    runpy.run_module('memwell', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('importlib.metadata' in sys.modules, file=sys.stderr)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert "8080" in run.stdout
    assert run.stderr.strip().splitlines()[-1] == "False", run.stderr
