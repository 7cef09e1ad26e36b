"""The pre-compaction memory flush: when to ask the agent to save durable memories.

The port of the reference's memory-flush plan (spec section 8). Before a host compacts a
long conversation, the agent gets one turn to write what is worth keeping into today's daily
note. :func:`plan_flush` decides from the host's context usage:

- a flush is due once ``tokens_used >= context_window - reserve - soft_threshold`` (reserve:
  the larger of ``[flush] reserve_tokens_floor``, 20,000, and the host's own reserve; soft
  threshold 4,000), or once the transcript reaches ``force_flush_transcript_bytes`` (2 MiB);
- at most once per compaction cycle and session: the first due plan claims the cycle in a
  :class:`FlushState`, later ones in the same cycle say it was done;
- the plan carries the instruction, a system prompt and the target file
  (``memory/YYYY-MM-DD.md``, the local date, the file ``memory_write`` appends to by default).

Example::

    plan = plan_flush(ContextUsage(tokens_used=110_000, context_window=128_000))
    if plan.flush:
        run_agent_turn(system=plan.system_prompt, prompt=plan.prompt)  # the host's own call
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from memwell.contract.config import FlushSettings, MemwellSettings
from memwell.contract.errors import InvalidArgumentError
from memwell.contract.records import Record
from memwell.util.lazy_import import lazy_logger
from memwell.writing.atomic import read_state, replace_file, write_lock

log = lazy_logger(__name__)

#: The reply that means "nothing to store" (the reference's silent token).
SILENT_TOKEN = "NO_REPLY"
#: Where :class:`FileFlushState` keeps its cycles, in the workspace's index directory.
STATE_FILE_NAME = "flush-state.json"
#: Sessions a state file remembers; the oldest are forgotten first.
MAX_TRACKED_SESSIONS = 1000
#: Files the flush must not touch (the reference's bootstrap files).
READ_ONLY_FILES = ("MEMORY.md", "DREAMS.md", "SOUL.md", "TOOLS.md", "AGENTS.md")
DATE_PLACEHOLDER = "YYYY-MM-DD"

DEFAULT_PROMPT = (
    "Pre-compaction memory flush. Store durable memories (decisions, preferences, facts "
    "worth keeping) only in memory/YYYY-MM-DD.md (create memory/ if needed); with the "
    "memory_write tool, append without a file argument. Treat "
    + ", ".join(READ_ONLY_FILES)
    + " as read-only during this flush; never overwrite, replace or edit them. If "
    "memory/YYYY-MM-DD.md already exists, APPEND new content only and do not overwrite "
    "existing entries. Do NOT create timestamped variant files (such as "
    "memory/YYYY-MM-DD-HHMM.md); always use the canonical memory/YYYY-MM-DD.md. "
    f"If nothing to store, reply with {SILENT_TOKEN}."
)
DEFAULT_SYSTEM_PROMPT = (
    "Pre-compaction memory flush turn. The session is near auto-compaction; capture durable "
    f"memories to disk. You may reply, but usually {SILENT_TOKEN} is correct."
)


@dataclass(frozen=True)
class ContextUsage:
    """What the host knows about the conversation's context.

    :param tokens_used: tokens the conversation occupies now.
    :param context_window: the model's context window in tokens.
    :param compaction_count: how many compactions happened so far (or any id of the current
        compaction cycle); a new value starts a new cycle.
    :param transcript_bytes: the transcript's size, if known (forces a flush past the limit).
    :param reserve_tokens: the host's own compaction reserve, if it has one.
    """

    tokens_used: int
    context_window: int
    compaction_count: int | str = 0
    transcript_bytes: int | None = None
    reserve_tokens: int | None = None


class FlushPlan(Record, kw_only=True):
    """The decision. ``prompt``, ``system_prompt`` and ``target`` are set when ``flush``."""

    flush: bool
    reason: str
    tokens_used: int
    context_window: int
    threshold_tokens: int
    cycle: str
    session_key: str
    target: str | None = None
    prompt: str | None = None
    system_prompt: str | None = None
    silent_token: str = SILENT_TOKEN


class FlushState(Protocol):
    """Which compaction cycle each session last flushed in."""

    def claim(self, session_key: str, cycle: str) -> bool:
        """Record a flush of ``session_key`` in ``cycle``; False if one was recorded already."""
        ...


class MemoryFlushState:
    """A :class:`FlushState` in this process's memory (thread-safe)."""

    def __init__(self) -> None:
        self._cycles: dict[str, str] = {}
        self._lock = threading.Lock()

    def claim(self, session_key: str, cycle: str) -> bool:
        with self._lock:
            if self._cycles.get(session_key) == cycle:
                return False
            self._cycles[session_key] = cycle
            return True


class FileFlushState:
    """A :class:`FlushState` in a JSON file, shared by processes (CLI calls, MCP servers).

    Claims are made under a cross-process lock with an atomic replace. An unreadable file is
    reported and started afresh: the worst outcome is one repeated flush.
    """

    def __init__(self, path: Path, *, lock_timeout: float = 10.0) -> None:
        self.path = path
        self.lock_timeout = lock_timeout

    @classmethod
    def for_workspace(cls, workspace: Path, settings: MemwellSettings) -> FileFlushState:
        """The state file of ``workspace``: ``<index_dir>/flush-state.json``."""
        return cls(
            workspace / settings.index_dir / STATE_FILE_NAME,
            lock_timeout=settings.write.lock_timeout_seconds,
        )

    def _cycles(self, raw: bytes) -> dict[str, str]:
        if not raw:
            return {}
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            log.warning("memwell: %s is not a flush state file; starting afresh", self.path)
            return {}
        return {str(key): value for key, value in data.items()}

    def claim(self, session_key: str, cycle: str) -> bool:
        with write_lock(self.path.with_name(self.path.name + ".lock"), self.lock_timeout):
            state = read_state(self.path)
            cycles = self._cycles(state.data)
            if cycles.get(session_key) == cycle:
                return False
            cycles.pop(session_key, None)
            cycles[session_key] = cycle
            while len(cycles) > MAX_TRACKED_SESSIONS:
                del cycles[next(iter(cycles))]
            replace_file(self.path, json.dumps(cycles, indent=1).encode(), state)
            return True


def flush_threshold(usage: ContextUsage, settings: FlushSettings) -> int:
    """``context_window - reserve - soft_threshold``, at least 0 (0 means "never")."""
    reserve = max(settings.reserve_tokens_floor, usage.reserve_tokens or 0)
    return max(0, max(1, usage.context_window) - reserve - settings.soft_threshold_tokens)


def daily_target(now: datetime) -> str:
    """Today's daily note for the local date of ``now``: ``memory/YYYY-MM-DD.md``."""
    return f"memory/{now:%Y-%m-%d}.md"


def flush_prompt(settings: FlushSettings, now: datetime) -> str:
    """The instruction for the flush turn on ``now``'s date, ending with a Current time line.

    A custom ``[flush] prompt`` has ``YYYY-MM-DD`` replaced by the date; the target file and
    the silent token are added when it leaves them out.
    """
    day = f"{now:%Y-%m-%d}"
    target = daily_target(now)
    prompt = (settings.prompt or DEFAULT_PROMPT).replace(DATE_PLACEHOLDER, day).strip()
    if target not in prompt:
        prompt += f" Store durable memories only in {target}, appending."
    if SILENT_TOKEN not in prompt:
        prompt += f" If nothing to store, reply with {SILENT_TOKEN}."
    return f"{prompt}\nCurrent time: {now:%Y-%m-%d %H:%M %Z (UTC%z)}".rstrip()


def _due(usage: ContextUsage, settings: FlushSettings, threshold: int) -> tuple[bool, str]:
    forced = settings.force_flush_transcript_bytes
    if forced and usage.transcript_bytes is not None and usage.transcript_bytes >= forced:
        return True, f"transcript is {usage.transcript_bytes} bytes (flush at {forced})"
    if usage.tokens_used <= 0:
        return False, "no token count"
    if threshold <= 0:
        return False, (
            f"context window {usage.context_window} is not above the reserve and soft "
            "threshold; no flush"
        )
    if usage.tokens_used < threshold:
        return False, f"{usage.tokens_used} tokens used; flush at {threshold}"
    return True, f"{usage.tokens_used} tokens used, past the flush threshold {threshold}"


def plan_flush(
    usage: ContextUsage,
    *,
    settings: FlushSettings | None = None,
    state: FlushState | None = None,
    session_key: str = "default",
    now: datetime | None = None,
) -> FlushPlan:
    """Whether to flush now, and if so the instruction and the target file.

    :param usage: the host's context usage.
    :param settings: ``[flush]`` (default: the reference's values).
    :param state: where cycles are claimed (default: a fresh :class:`MemoryFlushState`, so
        pass one that lives as long as the session).
    :param session_key: the conversation; each has its own cycles.
    :param now: the local time (default: now), for the target's date and the Current time.
    """
    cfg = settings or FlushSettings()
    moment = now or datetime.now().astimezone()
    threshold = flush_threshold(usage, cfg)
    cycle = str(usage.compaction_count)
    held = FlushPlan(
        flush=False,
        reason="",
        tokens_used=usage.tokens_used,
        context_window=usage.context_window,
        threshold_tokens=threshold,
        cycle=cycle,
        session_key=session_key,
    )
    if not cfg.enabled:
        return held.model_copy(update={"reason": "the flush is disabled ([flush] enabled)"})
    due, reason = _due(usage, cfg, threshold)
    if not due:
        return held.model_copy(update={"reason": reason})
    if not (state or MemoryFlushState()).claim(session_key, cycle):
        return held.model_copy(update={"reason": f"already flushed in compaction cycle {cycle}"})
    return _flush_now(cfg, moment, reason, held)


def _flush_now(cfg: FlushSettings, moment: datetime, reason: str, held: FlushPlan) -> FlushPlan:
    """``held`` (the usage figures) turned into a flush for ``reason``."""
    return held.model_copy(
        update={
            "flush": True,
            "reason": reason,
            "target": daily_target(moment),
            "prompt": flush_prompt(cfg, moment),
            "system_prompt": cfg.system_prompt or DEFAULT_SYSTEM_PROMPT,
        }
    )


def _int_argument(arguments: Mapping[str, str], name: str) -> int | None:
    raw = arguments.get(name)
    if raw is None or not str(raw).strip():
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise InvalidArgumentError(f"{name} must be an integer, got {raw!r}") from None


def plan_from_arguments(
    arguments: Mapping[str, str],
    *,
    settings: FlushSettings | None = None,
    state: FlushState | None = None,
    now: datetime | None = None,
) -> FlushPlan:
    """A plan from string arguments (an MCP prompt's): ``tokens_used``, ``context_window``,
    ``compaction_count``, ``transcript_bytes``, ``reserve_tokens``, ``session_key``.

    Without ``tokens_used`` and ``context_window`` the host has decided already: the plan
    flushes unconditionally (and claims nothing).

    :raises ValueError: a numeric argument is not an integer, or only one of the two is given.
    """
    tokens = _int_argument(arguments, "tokens_used")
    window = _int_argument(arguments, "context_window")
    session_key = (arguments.get("session_key") or "").strip() or "default"
    cycle = (arguments.get("compaction_count") or "").strip() or "0"
    if (tokens is None) != (window is None):
        raise InvalidArgumentError("give both tokens_used and context_window, or neither")
    if tokens is None or window is None:
        held = FlushPlan(
            flush=False,
            reason="",
            tokens_used=0,
            context_window=0,
            threshold_tokens=0,
            cycle=cycle,
            session_key=session_key,
        )
        moment = now or datetime.now().astimezone()
        return _flush_now(settings or FlushSettings(), moment, "requested by the host", held)
    usage = ContextUsage(
        tokens_used=tokens,
        context_window=window,
        compaction_count=cycle,
        transcript_bytes=_int_argument(arguments, "transcript_bytes"),
        reserve_tokens=_int_argument(arguments, "reserve_tokens"),
    )
    return plan_flush(usage, settings=settings, state=state, session_key=session_key, now=now)


def plan_text(plan: FlushPlan) -> str:
    """What a host shows the agent: the system prompt and instruction, or why not now."""
    if not plan.flush:
        return f"No memory flush needed now: {plan.reason}."
    return f"{plan.system_prompt}\n\n{plan.prompt}"
