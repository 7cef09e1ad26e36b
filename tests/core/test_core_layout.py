"""Core's layout: layer packages at the top, no import cycle, and the old paths for one release."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
import memwell
import pytest
from memwell.util.moved_paths import MOVED_MODULES

CORE = Path(memwell.__file__).parent


def _cycles(exclude_type_checking: bool) -> list[set[str]]:
    graph = grimp.build_graph(
        "memwell",
        include_external_packages=False,
        exclude_type_checking_imports=exclude_type_checking,
        cache_dir=None,  # a cached graph can predate the files
    )
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(component)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_core_top_level_holds_only_the_doors() -> None:
    modules = sorted(p.name for p in CORE.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "plugin.py", "plugin_sdk.py"]


def test_no_import_cycle_among_core_modules() -> None:
    assert _cycles(exclude_type_checking=True) == []


def test_no_import_cycle_even_through_type_only_imports() -> None:
    assert _cycles(exclude_type_checking=False) == []


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_module_path_imports_the_moved_module_with_a_warning(old: str) -> None:
    new = MOVED_MODULES[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__ is not None and module.__spec__.name == new


def test_names_that_left_a_module_still_resolve_with_a_warning() -> None:
    from memwell.agent.lifecycle import TurnMessage
    from memwell.runtime.fallback import unwrap

    with pytest.warns(DeprecationWarning, match="memwell.agent.TurnMessage moved"):
        from memwell.agent import TurnMessage as old_turn_message
    with pytest.warns(DeprecationWarning, match="memwell.recall.manager.unwrap moved"):
        from memwell.recall.manager import unwrap as old_unwrap
    assert old_turn_message is TurnMessage and old_unwrap is unwrap
    with pytest.raises(ImportError):
        from memwell.agent import no_such_name  # type: ignore[attr-defined]  # noqa: F401


def test_a_plugin_written_against_the_old_paths_still_works(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("error")  # anything but the expected warnings fails
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from memwell.backend import MemoryBackend
            from memwell.config import MemwellSettings
            from memwell.models import MemorySearchResult
            from memwell.errors import BackendUnavailableError
        from memwell.plugin import MemoryBackend as DoorBackend, MemorySearchResult as DoorResult
        assert MemoryBackend is DoorBackend and MemorySearchResult is DoorResult
        assert issubclass(BackendUnavailableError, Exception)
        print(MemwellSettings().query.max_results)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "6"
