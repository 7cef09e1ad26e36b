"""Give an OpenAI chat model memwell's memory tools and dispatch its tool calls.

``tool_definitions()`` returns ``memory_search`` and ``memory_get`` in OpenAI's function-calling
format; ``execute_tool(name, arguments, manager)`` runs one call (``arguments`` may be the raw
JSON string the model sent) and never raises, so its result can always go back to the model.

This script runs offline: ``scripted_model`` stands in for the model and returns the same
message shapes as the Chat Completions API. To use a real model, replace it with::

    from openai import OpenAI

    client = OpenAI()

    def chat(messages, tools):
        response = client.chat.completions.create(
            model="gpt-4.1-mini", messages=messages, tools=tools
        )
        return response.choices[0].message.model_dump(exclude_none=True)

Usage: ``python examples/openai_tools.py [WORKSPACE]`` (default: a temporary demo workspace).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memwell.agent.prompt import memory_prompt_section
from memwell.agent.tools import execute_tool, tool_definitions
from memwell.contract.manager import MemorySearchManager
from memwell.runtime.factory import open_memory

Message = dict[str, Any]
Chat = Callable[[list[Message], list[dict[str, Any]]], Message]

DEMO_FILES = {
    "MEMORY.md": "# Team memory\n\n"
    "- The staging database is PostgreSQL 16 on port 5433.\n"
    "- Production uses port 5432 and is only reachable through the bastion host.\n",
    "memory/2026-03-02.md": "# 2026-03-02\n\n"
    "- Decided to move the nightly backup from 01:00 to 02:00 UTC.\n",
}
QUESTION = "Which port does the staging database listen on?"


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> Message:
    """An assistant message asking for one tool call, shaped like the Chat Completions API."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def scripted_model(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
    """A stand-in model: search memory, read the best hit's lines, then answer from them."""
    assert {t["function"]["name"] for t in tools} >= {"memory_search", "memory_get"}
    last = messages[-1]
    if last["role"] == "user":
        return tool_call("call_1", "memory_search", {"query": last["content"], "max_results": 3})
    result = json.loads(last["content"])
    if "results" in result:
        if not result["results"]:
            return {"role": "assistant", "content": "I checked memory and found nothing."}
        top = result["results"][0]
        lines = top["end_line"] - top["start_line"] + 1
        args = {"path": top["path"], "from_line": top["start_line"], "lines": lines}
        return tool_call("call_2", "memory_get", args)
    question = next(m["content"] for m in messages if m["role"] == "user").lower()
    words = {w.strip("?.,") for w in question.split() if len(w) > 3}
    best = max(result["text"].splitlines(), key=lambda line: len(words & set(line.lower().split())))
    return {"role": "assistant", "content": f"{best.lstrip('- ')} (from {result['path']})"}


def describe(result: dict[str, Any]) -> str:
    if "results" in result:
        hits = result["results"]
        top = f", top {hits[0]['path']}#L{hits[0]['start_line']}" if hits else ""
        return f"{len(hits)} result(s){top}"
    if result.get("error"):
        return f"error: {result['error']}"
    return f"{len(result['text'].splitlines())} line(s) of {result['path']}"


def answer(question: str, manager: MemorySearchManager, chat: Chat) -> str:
    """Run the tool loop until the model replies without tool calls."""
    tools = tool_definitions()
    messages: list[Message] = [
        {"role": "system", "content": memory_prompt_section()},
        {"role": "user", "content": question},
    ]
    while True:
        reply = chat(messages, tools)
        messages.append(reply)
        if not reply.get("tool_calls"):
            content: str = reply["content"]
            return content
        for call in reply["tool_calls"]:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            result = execute_tool(name, arguments, manager)
            print(f"tool {name} {arguments} -> {describe(result)}")
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )


def run(workspace: Path) -> None:
    # Keyword-only mode keeps the demo offline; drop the override to use the configured provider.
    memory = open_memory(workspace, overrides={"provider": "none"})
    try:
        memory.sync(reason="example")
        print(f"user: {QUESTION}")
        print(f"assistant: {answer(QUESTION, memory, scripted_model)}")
    finally:
        memory.close()


def main(argv: list[str]) -> None:
    if argv:
        run(Path(argv[0]))
        return
    with tempfile.TemporaryDirectory(prefix="memwell-demo-") as tmp:
        for rel, text in DEMO_FILES.items():
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        run(Path(tmp))


if __name__ == "__main__":
    main(sys.argv[1:])
