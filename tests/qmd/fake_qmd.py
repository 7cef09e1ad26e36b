"""A fake ``qmd`` CLI for unit tests (the shape of qmd 2.8.3 for the subset memwell-qmd uses).

Same argv shapes, JSON shapes, exit codes and error texts as the real one. Collections live in
``$QMD_CONFIG_DIR/index.yml`` (as in qmd), documents in ``$XDG_CACHE_HOME/qmd/fake-docs.json``.

Faults: ``FAKE_QMD_FAULT`` = hang | crash | segv | noise | badjson | garbage | empty | big |
busy | unique | ci | model | nofile, applied to the commands in ``FAKE_QMD_FAULT_ON`` (comma
list, default ``search,vsearch,query``; ``version`` is ``--version``), for the first
``FAKE_QMD_FAULT_TIMES`` matching calls if set. ``hang`` first spawns a child (like qmd's
launcher does) and writes both pids to ``FAKE_QMD_PIDS``. Every call is appended to
``FAKE_QMD_LOG`` as one JSON line.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

CONFIG = Path(
    os.environ.get("QMD_CONFIG_DIR")
    or Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "qmd"
)
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "qmd"
INDEX_YML = CONFIG / "index.yml"
DOCS = CACHE / "fake-docs.json"
VALUE_FLAGS = {"-c", "--collection", "-n", "--name", "--mask", "--glob", "--index", "--min-score"}


def die(msg: str, code: int = 1) -> None:
    print(msg, file=sys.stderr)
    sys.exit(code)


def load_config() -> dict[str, Any]:
    if not INDEX_YML.exists():
        return {}
    data: dict[str, Any] = yaml.safe_load(INDEX_YML.read_text()) or {}
    return data


def save_config(cfg: dict[str, Any]) -> None:
    CONFIG.mkdir(parents=True, exist_ok=True)
    INDEX_YML.write_text(yaml.safe_dump(cfg, sort_keys=False))


def load_docs() -> dict[str, Any]:
    if not DOCS.exists():
        return {"docs": {}, "embedded": []}
    data: dict[str, Any] = json.loads(DOCS.read_text())
    return data


def save_docs(state: dict[str, Any]) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    DOCS.write_text(json.dumps(state))


def expand(pattern: str) -> list[str]:
    match = re.match(r"^(.*)\{([^}]*)\}(.*)$", pattern)
    if not match:
        return [pattern]
    return [match.group(1) + alt + match.group(3) for alt in match.group(2).split(",")]


def matches(rel: str, pattern: str) -> bool:
    for alt in expand(pattern):
        if alt.startswith("**/") and fnmatch.fnmatch(rel.rsplit("/", 1)[-1], alt[3:]):
            return True
        if "/" not in rel and fnmatch.fnmatch(rel, alt):
            return True
    return False


def reindex(cfg: dict[str, Any], state: dict[str, Any]) -> None:
    docs = {}
    for name, col in (cfg.get("collections") or {}).items():
        root = Path(col["path"])
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*.md")):
            rel = p.relative_to(root).as_posix()
            if p.is_symlink() or not matches(rel, col.get("pattern", "**/*.md")):
                continue
            body = p.read_text(errors="replace")
            title = re.search(r"^#\s+(.+)$", body, re.M)
            docs[f"{name}/{rel}"] = {
                "hash": hashlib.sha256(body.encode()).hexdigest(),
                "body": body,
                "title": title.group(1).strip() if title else p.stem,
            }
    state["docs"] = docs


def snippet(body: str, terms: list[str]) -> tuple[int, str]:
    lines = body.split("\n")
    best = max(range(len(lines)), key=lambda i: sum(t in lines[i].lower() for t in terms))
    start, end = max(0, best - 1), min(len(lines), best + 3)
    header = f"@@ -{start + 1},{end - start} @@ ({start} before, {len(lines) - end} after)"
    return best + 1, header + "\n" + "\n".join(lines[start:end])


def fault_for(cmd: str) -> str:
    fault = os.environ.get("FAKE_QMD_FAULT", "")
    targets = os.environ.get("FAKE_QMD_FAULT_ON", "search,vsearch,query").split(",")
    if not fault or cmd not in targets:
        return ""
    times = os.environ.get("FAKE_QMD_FAULT_TIMES")
    if times is not None:
        counter = CACHE / f"fake-fault-{cmd}.count"
        used = int(counter.read_text()) if counter.exists() else 0
        if used >= int(times):
            return ""
        CACHE.mkdir(parents=True, exist_ok=True)
        counter.write_text(str(used + 1))
    return fault


def inject(fault: str) -> None:
    if fault == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        if os.environ.get("FAKE_QMD_PIDS"):
            Path(os.environ["FAKE_QMD_PIDS"]).write_text(f"{os.getpid()} {child.pid}")
        time.sleep(3600)
    if fault == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "crash":
        die("Error: boom\n    at main (file:///qmd/dist/cli/qmd.js:1:1)\nNode.js v22.23.3", 1)
    if fault == "busy":
        die("SqliteError: database is locked\n  code: 'SQLITE_BUSY'")
    if fault == "unique":
        die("SqliteError: UNIQUE constraint failed: documents.collection, documents.path")
    if fault == "ci":
        die("Error: LLM operations are disabled in CI (set CI=true)")
    if fault == "model":
        die('Error: No model file found at "/nonexistent/x.gguf"')
    if fault == "exit":
        die("something went wrong", 3)


def search(cmd: str, argv: list[str], pos: list[str], fault: str) -> None:
    cfg, state = load_config(), load_docs()
    cols = [argv[i + 1] for i, a in enumerate(argv) if a in ("-c", "--collection")]
    n = next((int(argv[i + 1]) for i, a in enumerate(argv) if a == "-n"), 20)
    if len(pos) < 2:
        die(f"Usage: qmd {cmd} [options] <query>")
    for c in cols:
        if c not in (cfg.get("collections") or {}):
            die(f"Collection not found: {c}")
    terms = [t.lower() for t in " ".join(pos[1:]).split()]
    hits = []
    for key, d in state["docs"].items():
        if cols and key.split("/")[0] not in cols:
            continue
        body = d["body"].lower()
        if cmd == "search" and not all(t in body for t in terms):
            continue
        score = sum(body.count(t) for t in terms)
        if score == 0:
            continue
        line, snip = snippet(d["body"], terms)
        hit = {
            "docid": "#" + d["hash"][:6],
            "score": round(min(1.0, score / 5), 2),
            "file": f"qmd://{key}",
            "line": line,
            "title": d["title"],
            "snippet": snip,
        }
        if fault == "nofile":
            del hit["file"]
        hits.append(hit)
    hits.sort(key=lambda h: -h["score"])
    if fault == "noise":
        print("ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device [x]")
    if fault == "badjson":
        print("[{not json")
        return
    if fault == "garbage":
        print("Segmentation in progress... %%% not json at all")
        return
    if fault == "empty":
        return
    if fault == "big":
        print(json.dumps([{"file": "qmd://x/y.md", "snippet": "z" * 400_000, "score": 1}]))
        return
    print(json.dumps(hits[:n], indent=2) if "--json" in argv else "No results found.")


def status() -> None:
    cfg, state = load_config(), load_docs()
    docs = state["docs"]
    embedded = set(state["embedded"])
    pending = sum(1 for d in docs.values() if d["hash"] not in embedded)
    print("QMD Status\n")
    print(f"Index: {CACHE / 'index.sqlite'}\nSize:  4.0 KB\n\nDocuments")
    print(f"  Total:    {len(docs)} files indexed")
    print(f"  Vectors:  {len(docs) - pending} embedded")
    if pending:
        print(f"  Pending:  {pending} need embedding (run 'qmd embed')")
    print("  Updated:  1s ago\n")
    collections = cfg.get("collections") or {}
    if collections:
        print("Collections")
        for name, col in collections.items():
            files = sum(1 for k in docs if k.split("/")[0] == name)
            print(f"  {name} (qmd://{name}/)\n    Pattern:  {col['pattern']}")
            print(f"    Files:    {files} (updated 1s ago)")
        print()
    print("Models\n  Embedding:   " + os.environ.get("QMD_EMBED_MODEL", "embeddinggemma"))


def main(argv: list[str]) -> None:
    if os.environ.get("FAKE_QMD_LOG"):
        keys = ("CI", "INDEX_PATH", "NO_COLOR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "HOME")
        env = {k: os.environ.get(k) for k in keys}
        entry = {"argv": argv, "cwd": os.getcwd(), "env": env, "time": time.time()}
        with open(os.environ["FAKE_QMD_LOG"], "a") as fh:
            fh.write(json.dumps(entry) + "\n")
    if "--version" in argv:
        inject(fault_for("version"))
        print("qmd 2.8.3 (fake)")
        return
    split = argv.index("--") if "--" in argv else len(argv)
    options, rest = argv[:split], argv[split + 1 :]
    pos = [
        a
        for i, a in enumerate(options)
        if not a.startswith("-") and (i == 0 or options[i - 1] not in VALUE_FLAGS)
    ] + rest
    cmd = pos[0] if pos else ""
    fault = fault_for(cmd)
    inject(fault)
    cfg, state = load_config(), load_docs()
    collections = cfg.setdefault("collections", {})
    if cmd == "collection" and pos[1:2] == ["add"]:
        path = os.path.realpath(pos[2])
        name = argv[argv.index("--name") + 1] if "--name" in argv else Path(path).name
        flag = "--mask" if "--mask" in argv else "--glob"
        pattern = argv[argv.index(flag) + 1] if flag in argv else "**/*.md"
        if not os.path.isdir(path):
            die(f"Collection path does not exist.\n  Received: {pos[2]}")
        if name in collections:
            die(f"Collection '{name}' already exists.\nUse a different name with --name <name>")
        for other, col in collections.items():
            if col["path"] == path and col["pattern"] == pattern:
                die(f"A collection already exists for this path and pattern: {other}")
        collections[name] = {"path": path, "pattern": pattern}
        save_config(cfg)
        reindex(cfg, state)
        save_docs(state)
        print(f"✓ Collection '{name}' created successfully")
    elif cmd == "collection" and pos[1:2] in (["remove"], ["rm"]):
        if pos[2] not in collections:
            die(f"Collection not found: {pos[2]}")
        del collections[pos[2]]
        save_config(cfg)
        reindex(cfg, state)
        save_docs(state)
        print(f"✓ Removed collection '{pos[2]}'")
    elif cmd == "update":
        reindex(cfg, state)
        save_docs(state)
        print("✓ All collections updated.")
    elif cmd == "embed":
        state["embedded"] = [d["hash"] for d in state["docs"].values()]
        save_docs(state)
        print("✓ Done!")
    elif cmd == "status":
        status()
    elif cmd in ("search", "vsearch", "query"):
        search(cmd, argv, pos, fault)
    else:
        die(f"Unknown command: {cmd}\nRun 'qmd --help' for usage.")


if __name__ == "__main__":
    main(sys.argv[1:])
