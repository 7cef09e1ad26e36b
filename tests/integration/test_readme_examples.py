"""The README's examples work as printed (issue 16 item 7)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_python_snippet() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("From Python") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


@pytest.mark.slow
def test_python_snippet_finds_the_release_decision_on_the_demo(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "demo", tmp_path / "examples" / "demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-c", readme_python_snippet()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    hits = [line for line in done.stdout.splitlines() if re.match(r"memory/\S+:\d+-\d+  ", line)]
    assert hits, f"the snippet printed no hit:\n{done.stdout}"
    text = (tmp_path / "examples" / "demo" / hits[0].split(":")[0]).read_text()
    assert "ship version 2.3" in text, "the top hit is the release decision"
    projects = (tmp_path / "examples" / "demo" / "memory" / "projects.md").read_text()
    assert "\n".join(projects.split("\n")[:5]) in done.stdout


def readme_section(title: str) -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index(f"\n## {title}\n")
    return readme[start : readme.index("\n## ", start + 1)]


def quickstart() -> tuple[list[str], str]:
    """The Quickstart's search command (after the install) and the answer it quotes."""
    section = readme_section("Quickstart")
    found = re.search(r"```bash\nbash scripts/install.sh && (.*?)\n```", section)
    assert found is not None, "the Quickstart is two commands: the install, then a search"
    answer = re.search(r'its\s+answer\s+\("(.*?)"\)', section, re.DOTALL)
    assert answer is not None
    return shlex.split(found.group(1)), " ".join(answer.group(1).split())


def _shares_a_stem(one: str, other: str) -> bool:
    """True when two words could share a stem: one starts the other, or they share their
    first four letters (stricter than any stemmer: ``ship``/``shipping``, ``rele``...)."""
    return one.startswith(other) or other.startswith(one) or one[:4] == other[:4]


def _run_quickstart(cwd: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """The Quickstart's search, verbatim but for the path of ``memwell`` (this venv's)."""
    command, *args = quickstart()[0]
    assert command == ".venv/bin/memwell"
    shutil.copytree(REPO / "examples" / "demo", cwd / "examples" / "demo", dirs_exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWELL_")}
    env.update(XDG_CONFIG_HOME=str(cwd / "xdg"), HF_HUB_OFFLINE="1")
    memwell = str(Path(sys.executable).with_name("memwell"))
    return subprocess.run(
        [memwell, *flags, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _hit_blocks(stdout: str) -> list[tuple[str, str]]:
    """``(path, printed lines)`` of each hit ``memwell search`` printed, best first."""
    blocks = re.split(r"^(?=\S+:\d+-\d+  score )", stdout, flags=re.MULTILINE)
    return [(b.split(":", 1)[0], b) for b in blocks if re.match(r"\S+:\d+-\d+  score ", b)]


def test_quickstart_question_shares_no_word_with_its_answer_and_keywords_miss_it(
    tmp_path: Path,
) -> None:
    """Issue 40 item 1: the Quickstart demonstrates semantic recall, as it says."""
    from memwell.retrieval.keywords import extract_keywords

    args, answer = quickstart()
    question = args[-1]
    answer_file = next(
        p for p in (REPO / "examples" / "demo").rglob("*.md") if answer in p.read_text()
    )
    words = extract_keywords(question)
    assert words, "the question has content words"
    shared = [
        (mine, theirs)
        for mine in words
        for theirs in extract_keywords(answer_file.read_text())
        if _shares_a_stem(mine, theirs)
    ]
    assert not shared, f"the question shares words with the answer's file: {shared}"
    keyword_only = _run_quickstart(tmp_path, "--provider", "none")
    assert keyword_only.returncode == 0, keyword_only.stderr
    assert keyword_only.stdout == "no results\n", "the README: a keyword-only search finds nothing"


@pytest.mark.slow
def test_quickstart_finds_the_answer_first_with_the_default_model(tmp_path: Path) -> None:
    done = _run_quickstart(tmp_path)
    assert done.returncode == 0, done.stderr
    hits = _hit_blocks(done.stdout)
    assert hits, f"no hit above the score floor:\n{done.stdout}"
    _, answer = quickstart()
    path, printed = hits[0]
    assert answer in printed, f"the answer is not the first hit:\n{done.stdout}"
    assert re.search(r"^  3: - We agreed to ship version 2\.3", printed, re.MULTILINE)
    assert path.startswith("memory/2026-11-20.md")


def _documented_config_keys(readme: str) -> set[str]:
    """Dotted keys the README's Configuration section documents: its TOML block (commented
    keys and inline tables included) and its table of sections."""
    section = readme[
        readme.index("## Configuration") : readme.index(
            "\n## ", readme.index("## Configuration") + 1
        )
    ]
    found = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert found is not None
    keys: set[str] = set()
    prefix = ""
    for raw in found.group(1).splitlines():
        line = raw.strip()
        header = re.match(r"^\[([\w.\-]+)\]", line)
        if header:
            prefix = header.group(1) + "."
            continue
        entry = re.match(r"^#?\s*(\w+)\s*=\s*(.*)", line)
        if not entry:
            continue
        name, value = entry.groups()
        if value.startswith("{") and "=" in value:
            keys.update(f"{prefix}{name}.{inner}" for inner in re.findall(r"(\w+)\s*=", value))
        else:
            keys.add(prefix + name)
    for row in re.findall(r"^\| `\[([\w.]+)\]` \| (.*) \|$", section, re.MULTILINE):
        table, cell = row
        keys.update(f"{table}.{name}" for name in re.findall(r"`(\w+)`", cell))
    return keys


def _setting_keys(values: dict[str, object], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, value in values.items():
        if not prefix and name in ("backends", "providers"):
            continue  # plugin sections, documented by each plugin
        if isinstance(value, dict) and value:
            keys |= _setting_keys(value, f"{prefix}{name.rstrip('_')}.")
        else:
            keys.add(prefix + name.rstrip("_"))  # lambda_ is the TOML key "lambda"
    return keys


def test_configuration_section_documents_every_core_setting() -> None:
    from memwell.contract.config import MemwellSettings

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    undocumented = _setting_keys(MemwellSettings().model_dump()) - _documented_config_keys(readme)
    assert not undocumented, f"settings missing from the README's Configuration: {undocumented}"
