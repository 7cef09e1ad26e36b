from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from memwell.contract.errors import PathNotAllowedError
from memwell.sources.paths import is_memory_path, read_memory_file, resolve_read_path

SECRET = "TOP-SECRET-OUTSIDE"
PRIVATE = "WORKSPACE-PRIVATE"
FIVE_LINES = "l1\nl2\nl3\nl4\nl5"


@dataclass(frozen=True)
class Sandbox:
    root: Path
    ws: Path
    extra: Path
    outside: Path

    @property
    def extras(self) -> list[str]:
        return [str(self.extra), "../extra-file.md"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build_sandbox(root: Path) -> Sandbox:
    """A workspace with memory files, hostile symlinks, an extra dir and secrets outside."""
    ws, extra, outside = root / "ws", root / "extra", root / "outside"
    write(outside / "secret.md", SECRET)
    write(outside / "sub" / "deep.md", SECRET + "-deep")
    write(root / "secret.md", SECRET + "-root")
    write(ws / "MEMORY.md", "root memory")
    write(ws / "DREAMS.md", "dreams")
    write(ws / "memory" / "notes.md", FIVE_LINES)
    write(ws / "memory" / "sub" / "deep.md", "deep memory")
    write(ws / "src" / "private.md", PRIVATE)
    write(extra / "team.md", "team notes")
    write(root / "extra-file.md", "extra file")
    os.symlink(outside, ws / "memory" / "link")
    os.symlink(outside / "secret.md", ws / "memory" / "evil.md")
    os.symlink(ws / "src", ws / "memory" / "src-link")
    os.symlink(ws / "MEMORY.md", ws / "memory" / "alias.md")
    os.symlink(outside, extra / "link")
    os.symlink(outside / "secret.md", extra / "evil.md")
    return Sandbox(root, ws, extra, outside)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield build_sandbox(tmp_path_factory.mktemp("paths"))


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("MEMORY.md", True),
        ("memory.md", True),
        ("DREAMS.md", True),
        ("./MEMORY.md", True),
        ("././memory/a.md", True),
        ("memory/a/b.md", True),
        ("memory/", True),
        ("notes/memory/a.md", False),
        ("memoryx/a.md", False),
        ("Memory/a.md", False),
        ("dreams.md", False),
        ("../memory/a.md", False),
        ("memory\\a.md", False),
    ],
)
def test_is_memory_path(rel: str, expected: bool) -> None:
    assert is_memory_path(rel) is expected


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("MEMORY.md", "root memory"),
        ("  memory/notes.md  ", FIVE_LINES),
        ("DREAMS.md", "dreams"),
        ("./memory/sub/deep.md", "deep memory"),
        ("memory/../MEMORY.md", "root memory"),
        ("memory/sub/../notes.md", FIVE_LINES),
    ],
)
def test_reads_memory_files(sandbox: Sandbox, rel: str, text: str) -> None:
    assert read_memory_file(sandbox.ws, rel).text == text


def test_absolute_path_inside_the_allowed_set_is_accepted(sandbox: Sandbox) -> None:
    result = read_memory_file(sandbox.ws, str(sandbox.ws / "memory" / "notes.md"))
    assert result.path == "memory/notes.md"
    assert result.text == FIVE_LINES


def test_missing_file_gives_empty_text(sandbox: Sandbox) -> None:
    result = read_memory_file(sandbox.ws, "memory/2099-01-01.md")
    assert (result.path, result.text) == ("memory/2099-01-01.md", "")
    assert read_memory_file(sandbox.ws, "memory/no-dir/x.md").text == ""
    assert read_memory_file(sandbox.ws, "memory/notes.md/x.md").text == ""


@pytest.mark.parametrize(
    ("from_line", "lines", "expected"),
    [
        (None, None, FIVE_LINES),
        (0, 0, FIVE_LINES),
        (2, 2, "l2\nl3"),
        (4, None, "l4\nl5"),
        (None, 2, "l1\nl2"),
        (3, 0, "l3\nl4\nl5"),
        (-4, 1, "l1"),
        (2, -3, "l2"),
        (5, 10, "l5"),
        (6, None, ""),
        (100, 3, ""),
    ],
)
def test_line_slices(
    sandbox: Sandbox, from_line: int | None, lines: int | None, expected: str
) -> None:
    result = read_memory_file(sandbox.ws, "memory/notes.md", from_line=from_line, lines=lines)
    assert result.text == expected


@settings(max_examples=150, deadline=None)
@given(
    content=st.text(alphabet="ab \n\r\t→", max_size=40),
    from_line=st.integers(-2, 12),
    lines=st.integers(-2, 12),
)
def test_slices_match_split_semantics(
    sandbox: Sandbox, content: str, from_line: int, lines: int
) -> None:
    path = sandbox.ws / "memory" / "generated.md"
    path.write_bytes(content.encode("utf-8"))
    result = read_memory_file(sandbox.ws, "memory/generated.md", from_line=from_line, lines=lines)
    all_lines = content.split("\n")
    if not from_line and not lines:
        assert result.text == content
        return
    start = max(1, from_line or 1) - 1
    count = max(1, lines or len(all_lines))
    assert result.text == "\n".join(all_lines[start : start + count])


def test_undecodable_bytes_are_replaced(sandbox: Sandbox) -> None:
    path = sandbox.ws / "memory" / "binary.md"
    path.write_bytes(b"ok\n\xff\xfe\nend")
    assert read_memory_file(sandbox.ws, "memory/binary.md").text == "ok\n\ufffd\ufffd\nend"
    sliced = read_memory_file(sandbox.ws, "memory/binary.md", from_line=2, lines=1)
    assert sliced.text == "\ufffd\ufffd"


def test_file_vanishing_after_the_checks_gives_empty_text(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def vanish(path: object, flags: int, *args: int) -> int:
        if str(path).endswith("notes.md"):
            raise FileNotFoundError(2, "gone", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", vanish)
    assert read_memory_file(sandbox.ws, "memory/notes.md", from_line=1, lines=1).text == ""


def test_symlink_swapped_in_after_the_checks_is_refused(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swapped(path: object, flags: int, *args: int) -> int:
        raise OSError(40, "Too many levels of symbolic links", str(path))

    monkeypatch.setattr(os, "open", swapped)
    with pytest.raises(PathNotAllowedError):
        read_memory_file(sandbox.ws, "memory/notes.md")


@pytest.mark.parametrize(
    "rel",
    [
        "",
        "   ",
        "src/private.md",
        "notes.md",
        "memory/notes.txt",
        "memory",
        "../outside/secret.md",
        "../secret.md",
        "memory/../../secret.md",
        "/etc/passwd",
        "memory/../src/private.md",
        "memory\\..\\src\\private.md",
        "memory/notes.md\x00.md",
        "memory/" + "a" * 5000 + ".md",
        "memory/\ud800.md",
    ],
)
def test_paths_outside_the_memory_files_are_rejected(sandbox: Sandbox, rel: str) -> None:
    with pytest.raises(PathNotAllowedError):
        read_memory_file(sandbox.ws, rel)


def test_empty_path_message(sandbox: Sandbox) -> None:
    with pytest.raises(PathNotAllowedError, match="path required"):
        read_memory_file(sandbox.ws, " ")


@pytest.mark.parametrize(
    "rel",
    [
        "memory/evil.md",
        "memory/link/secret.md",
        "memory/link/sub/deep.md",
        "memory/link/../../secret.md",
        "memory/src-link/private.md",
        "memory/alias.md",
    ],
)
def test_symlinks_are_blocked(sandbox: Sandbox, rel: str) -> None:
    with pytest.raises(PathNotAllowedError):
        read_memory_file(sandbox.ws, rel)


def test_fifo_is_rejected_without_blocking(tmp_path: Path) -> None:
    os.makedirs(tmp_path / "memory")
    os.mkfifo(tmp_path / "memory" / "pipe.md")
    with pytest.raises(PathNotAllowedError):
        read_memory_file(tmp_path, "memory/pipe.md")


def test_extra_paths_are_allowed(sandbox: Sandbox) -> None:
    team = read_memory_file(sandbox.ws, "../extra/team.md", extra_paths=sandbox.extras)
    assert (team.path, team.text) == ("../extra/team.md", "team notes")
    by_abs = read_memory_file(
        sandbox.ws, str(sandbox.extra / "team.md"), extra_paths=sandbox.extras
    )
    assert by_abs.text == "team notes"
    single = read_memory_file(sandbox.ws, "../extra-file.md", extra_paths=sandbox.extras)
    assert single.text == "extra file"
    missing = read_memory_file(sandbox.ws, "../extra/new.md", extra_paths=sandbox.extras)
    assert missing.text == ""


def test_extra_paths_are_required_for_files_outside_the_workspace(sandbox: Sandbox) -> None:
    with pytest.raises(PathNotAllowedError):
        read_memory_file(sandbox.ws, "../extra/team.md")


@pytest.mark.parametrize(
    "rel",
    ["../extra/link/secret.md", "../extra/evil.md", "../extra/../outside/secret.md"],
)
def test_extra_dir_cannot_be_escaped(sandbox: Sandbox, rel: str) -> None:
    with pytest.raises(PathNotAllowedError):
        read_memory_file(sandbox.ws, rel, extra_paths=sandbox.extras)


def test_symlinked_extra_entries_grant_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    os.symlink(sandbox.outside, tmp_path / "dir-link")
    os.symlink(sandbox.outside / "secret.md", tmp_path / "file-link.md")
    extras = [str(tmp_path / "dir-link"), str(tmp_path / "file-link.md")]
    for rel in [str(tmp_path / "dir-link" / "secret.md"), str(tmp_path / "file-link.md")]:
        with pytest.raises(PathNotAllowedError):
            read_memory_file(sandbox.ws, rel, extra_paths=extras)


def test_extra_file_entry_allows_only_that_markdown_file(sandbox: Sandbox) -> None:
    extras = [str(sandbox.outside / "secret.txt"), "../extra-file.md"]
    write(sandbox.outside / "secret.txt", SECRET)
    for rel in ["../outside/secret.txt", "../extra-file.md/x.md", "../outside/secret.md"]:
        with pytest.raises(PathNotAllowedError):
            read_memory_file(sandbox.ws, rel, extra_paths=extras)


def test_resolve_returns_real_path_and_display_path(sandbox: Sandbox) -> None:
    real, display = resolve_read_path(sandbox.ws, "memory/sub/../notes.md")
    assert display == "memory/notes.md"
    assert real == Path(os.path.realpath(sandbox.ws / "memory" / "notes.md"))


def test_symlinked_workspace_still_works(sandbox: Sandbox, tmp_path: Path) -> None:
    os.symlink(sandbox.ws, tmp_path / "ws-link")
    assert read_memory_file(tmp_path / "ws-link", "memory/notes.md").text == FIVE_LINES
    with pytest.raises(PathNotAllowedError):
        read_memory_file(tmp_path / "ws-link", "memory/link/secret.md")


PREFIXES = st.sampled_from(
    [
        "", "memory", "memory/link", "memory/src-link", "memory/sub", "../extra", "../extra/link",
        "..", "{ws}", "{ws}/memory/link", "{outside}", "{root}/extra",
    ]
)  # fmt: skip
SEGMENTS = st.sampled_from(
    [
        "..", ".", "", "memory", "link", "evil.md", "secret.md", "deep.md", "sub", "src",
        "private.md", "notes.md", "MEMORY.md", "alias.md", "team.md", "extra-file.md", "ws",
        "\\", "..\\..", "\x00", "é", "a" * 300, "x.md",
    ]
)  # fmt: skip
HOSTILE_PATHS = st.one_of(
    st.text(max_size=50),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=20),
    st.tuples(PREFIXES, st.lists(SEGMENTS, max_size=5)).map(lambda t: "/".join([t[0], *t[1]])),
    st.sampled_from(["/etc/passwd", "/", "~/.ssh/id_rsa.md", "C:\\secret.md", "x" * 5000]),
)


@settings(max_examples=400, deadline=None)
@given(rel=HOSTILE_PATHS, with_extras=st.booleans())
@example(rel="memory/evil.md", with_extras=False)
@example(rel="memory/alias.md", with_extras=False)
@example(rel="memory/link/secret.md", with_extras=False)
@example(rel="memory/src-link/private.md", with_extras=False)
@example(rel="{ws}/memory/link/sub/deep.md", with_extras=True)
@example(rel="../extra/link/secret.md", with_extras=True)
@example(rel="../extra/evil.md", with_extras=True)
def test_hostile_paths_never_leak(sandbox: Sandbox, rel: str, with_extras: bool) -> None:
    extras = sandbox.extras if with_extras else []
    for name, path in [
        ("{ws}", sandbox.ws),
        ("{outside}", sandbox.outside),
        ("{root}", sandbox.root),
    ]:
        rel = rel.replace(name, str(path))
    try:
        result = read_memory_file(sandbox.ws, rel, extra_paths=extras)
    except PathNotAllowedError:
        return
    assert SECRET not in result.text
    assert PRIVATE not in result.text
    real, _ = resolve_read_path(sandbox.ws, rel, extras)
    roots = [Path(os.path.realpath(sandbox.ws))]
    if with_extras:
        roots += [Path(os.path.realpath(sandbox.extra)), sandbox.root / "extra-file.md"]
    assert any(real == root or root in real.parents for root in roots)
    assert not os.path.islink(os.path.join(sandbox.ws, rel.strip()))
