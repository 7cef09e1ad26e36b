from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.contract.errors import PathNotAllowedError
from memwell.sources.discovery import (
    SourceFile,
    list_memory_files,
    normalize_extra_paths,
    open_regular_file,
    read_source_file,
    relative_path,
    scan_memory_files,
    stat_source_file,
)


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def rels(paths: list[Path], workspace: Path) -> list[str]:
    return [relative_path(path, workspace) for path in paths]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md")
    write(ws / "memory" / "2026-01-01.md")
    write(ws / "memory" / "topics" / "rust.md")
    write(ws / "memory" / "notes.txt")
    write(ws / "notes" / "not-memory.md")
    write(ws / "DREAMS.md")
    return ws


def test_lists_root_files_and_memory_tree_sorted(workspace: Path) -> None:
    write(workspace / "memory.md")
    found = list_memory_files(workspace)
    assert rels(found, workspace) == sorted(
        ["MEMORY.md", "memory.md", "memory/2026-01-01.md", "memory/topics/rust.md"],
        key=lambda rel: str(workspace / rel),
    )
    assert found == sorted(found, key=str)
    assert all(path.is_absolute() for path in found)


def test_symlinks_and_special_files_are_skipped(workspace: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "secret.md")
    os.symlink(outside, workspace / "memory" / "linked.md")
    os.symlink(outside.parent, workspace / "memory" / "linked-dir")
    os.mkfifo(workspace / "memory" / "pipe.md")
    (workspace / "memory" / "dir.md").mkdir()
    assert rels(list_memory_files(workspace), workspace) == [
        "MEMORY.md",
        "memory/2026-01-01.md",
        "memory/topics/rust.md",
    ]


def test_symlinked_root_files_and_memory_dir_are_not_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    real = write(tmp_path / "elsewhere" / "MEMORY.md")
    write(tmp_path / "elsewhere" / "memory" / "a.md")
    ws.mkdir()
    os.symlink(real, ws / "MEMORY.md")
    os.symlink(tmp_path / "elsewhere" / "memory", ws / "memory")
    assert list_memory_files(ws) == []


@pytest.mark.parametrize(
    "skipped", [".git", "node_modules", ".venv", "venv", "__pycache__", ".memwell"]
)
def test_tool_and_cache_directories_are_skipped_inside_walks(
    workspace: Path, tmp_path: Path, skipped: str
) -> None:
    write(workspace / "memory" / skipped / "x.md")
    write(workspace / "memory" / "deep" / skipped / "y.md")
    extra = write(tmp_path / "extra" / skipped / "z.md").parent.parent
    found = rels(list_memory_files(workspace, [str(extra)]), workspace)
    assert not any(f"/{skipped}/" in rel for rel in found)


def test_missing_workspace_gives_nothing(tmp_path: Path) -> None:
    assert list_memory_files(tmp_path / "absent", ["docs"]) == []


def test_extra_directory_single_file_and_relative_entries(workspace: Path, tmp_path: Path) -> None:
    write(tmp_path / "shared" / "team.md")
    write(tmp_path / "shared" / "sub" / "deep.md")
    write(tmp_path / "shared" / "image.png")
    write(tmp_path / "one.md")
    write(tmp_path / "one.txt")
    write(workspace / "docs" / "guide.md")
    extras = [str(tmp_path / "shared"), "  ../one.md  ", "docs", "../one.txt", "", "   "]
    found = rels(list_memory_files(workspace, extras), workspace)
    for rel in ["../shared/team.md", "../shared/sub/deep.md", "../one.md", "docs/guide.md"]:
        assert rel in found
    assert "../shared/image.png" not in found
    assert "../one.txt" not in found
    assert "notes/not-memory.md" not in found


def test_missing_extra_paths_are_ignored(workspace: Path) -> None:
    assert list_memory_files(workspace, ["nope", "/definitely/not/here.md"]) == (
        list_memory_files(workspace)
    )


def test_symlinked_extra_entries_are_ignored(workspace: Path, tmp_path: Path) -> None:
    write(tmp_path / "real" / "a.md")
    os.symlink(tmp_path / "real", tmp_path / "dir-link")
    os.symlink(tmp_path / "real" / "a.md", tmp_path / "file-link.md")
    extras = [str(tmp_path / "dir-link"), str(tmp_path / "file-link.md")]
    assert list_memory_files(workspace, extras) == list_memory_files(workspace)


def test_overlapping_entries_are_deduplicated_by_realpath(workspace: Path, tmp_path: Path) -> None:
    write(tmp_path / "shared" / "team.md")
    extras = [
        "memory",
        "./memory/topics/rust.md",
        str(tmp_path / "shared"),
        str(tmp_path / "shared") + "/",
        "../shared/team.md",
        "../ws/../shared",
    ]
    found = list_memory_files(workspace, extras)
    reals = [os.path.realpath(path) for path in found]
    assert len(reals) == len(set(reals))
    assert rels(found, workspace).count("../shared/team.md") == 1
    assert "memory/topics/rust.md" in rels(found, workspace)


def test_scan_gives_each_listed_file_with_the_stat_a_sync_compares(
    workspace: Path, tmp_path: Path
) -> None:
    """The sync's walk (one lstat per file) agrees with listing then stating each file."""
    write(tmp_path / "shared" / "team.md", "team notes\n")
    os.link(workspace / "MEMORY.md", workspace / "memory" / "alias.md")
    extras = ["memory", str(tmp_path / "shared"), "../shared/team.md", "DREAMS.md"]
    found = scan_memory_files(workspace, extras)
    listed = list_memory_files(workspace, extras)
    assert [Path(f.abs_path) for f in found] == listed
    assert [(f.path, f.mtime_ns, f.size) for f in found] == [
        stat_source_file(path, workspace) for path in listed
    ]
    assert [f.path for f in found] == [
        "../shared/team.md",
        "DREAMS.md",
        "MEMORY.md",
        "memory/2026-01-01.md",
        "memory/topics/rust.md",
    ], "sorted by absolute path; the hard-linked alias of MEMORY.md is listed once"


def test_realpath_dedupe_keeps_the_first_entry(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "memory" / "a.md")
    os.symlink(ws / "memory", tmp_path / "alias")
    found = list_memory_files(ws, [str(tmp_path / "alias" / "a.md")])
    assert found == [ws / "memory" / "a.md"]


def test_aliases_of_one_file_are_listed_once(tmp_path: Path) -> None:
    """Hard links stand in for case-insensitive aliases such as MEMORY.md and memory.md."""
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md")
    os.link(ws / "MEMORY.md", ws / "memory.md")
    write(ws / "memory" / "b.md")
    os.link(ws / "memory" / "b.md", ws / "memory" / "c.md")
    assert rels(list_memory_files(ws), ws) == ["MEMORY.md", "memory/b.md"]


def test_normalize_extra_paths_trims_resolves_and_dedupes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert normalize_extra_paths(ws, [" docs ", "docs/", "./docs", "", str(tmp_path / "x")]) == [
        ws / "docs",
        tmp_path / "x",
    ]


_PART = st.sampled_from(["memory", "a.md", "..", ".", "", "x y", "notes", "é.md"])


@given(st.lists(_PART, max_size=4), st.lists(_PART, min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_relative_path_equals_relpath(root_parts: list[str], rest: list[str]) -> None:
    """The string-prefix fast path gives exactly what ``os.path.relpath`` gives."""
    root = "/" + "/".join(root_parts)
    path = root.rstrip("/") + "/" + "/".join(rest)
    expected = PurePath(os.path.relpath(path, root)).as_posix()
    assert relative_path(Path(path), Path(root)) == expected
    assert relative_path(path, root) == expected  # type: ignore[arg-type]


def test_relative_path_uses_posix_and_dotdot(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert relative_path(ws / "memory" / "a.md", ws) == "memory/a.md"
    assert relative_path(tmp_path / "extra" / "b.md", ws) == "../extra/b.md"


def test_read_source_file_hashes_bytes_and_replaces_bad_utf8(workspace: Path) -> None:
    raw = "héllo\n".encode() + b"\xff\xfe end"
    path = workspace / "memory" / "bytes.md"
    path.write_bytes(raw)
    result = read_source_file(path, workspace)
    assert result is not None
    entry, text = result
    info = os.stat(path)
    assert entry == SourceFile(
        path="memory/bytes.md",
        abs_path=path,
        mtime_ns=info.st_mtime_ns,
        size=len(raw),
        hash=hashlib.sha256(raw).hexdigest(),
    )
    assert text == "héllo\n\ufffd\ufffd end"
    assert stat_source_file(path, workspace) == ("memory/bytes.md", info.st_mtime_ns, len(raw))


def test_session_sources_are_stored_under_sessions(tmp_path: Path) -> None:
    transcript = write(tmp_path / "state" / "sessions" / "abc.jsonl", "{}\n")
    result = read_source_file(transcript, tmp_path / "ws", source="sessions")
    assert result is not None
    assert result[0].path == "sessions/abc.jsonl"
    assert result[0].source == "sessions"
    stat = stat_source_file(transcript, tmp_path / "ws", source="sessions")
    assert stat is not None
    assert stat[0] == "sessions/abc.jsonl"


def test_vanished_symlinked_or_special_files_give_none(workspace: Path, tmp_path: Path) -> None:
    target = write(tmp_path / "outside.md", "secret")
    os.symlink(target, workspace / "memory" / "swapped.md")
    os.mkfifo(workspace / "memory" / "pipe.md")
    for name in ["gone.md", "swapped.md", "pipe.md"]:
        path = workspace / "memory" / name
        assert read_source_file(path, workspace) is None
        assert stat_source_file(path, workspace) is None


def test_open_regular_file_classifies_failures(workspace: Path, tmp_path: Path) -> None:
    os.symlink(workspace / "MEMORY.md", workspace / "memory" / "link.md")
    with pytest.raises(FileNotFoundError):
        open_regular_file(workspace / "memory" / "missing.md")
    with pytest.raises(FileNotFoundError):
        open_regular_file(workspace / "MEMORY.md" / "child.md")
    with pytest.raises(FileNotFoundError):
        open_regular_file(workspace / ("x" * 300 + ".md"))
    with pytest.raises(PathNotAllowedError):
        open_regular_file(workspace / "memory" / "link.md")
    with pytest.raises(PathNotAllowedError):
        open_regular_file(workspace / "memory")
    with open_regular_file(workspace / "MEMORY.md") as handle:
        assert handle.read() == b"x\n"
