from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import memwell.agent.tools as memwell_tools
import pytest
from memwell.agent.prompt import memory_prompt_section
from memwell.agent.tools import (
    MEMORY_GET_TOOL,
    MEMORY_SEARCH_TOOL,
    NOTICE,
    BadArgument,
    error_text,
    execute_tool,
    memory_get,
    memory_search,
    optional_int,
    parse_arguments,
    plugin_tools,
    run_tool,
    tool_definitions,
)
from memwell.contract.descriptors import AgentTool
from memwell.contract.errors import BackendUnavailableError, PathNotAllowedError, ProviderError
from memwell.contract.hookspecs import hookimpl
from memwell.contract.manager import MemorySearchManager
from memwell.contract.models import (
    FallbackStatus,
    MemorySearchResult,
    MemoryStatus,
    ProbeResult,
    ReadFileResult,
)
from memwell.registry.plugins import PluginRegistry

DIRECT = "agent:main:direct:alice"
GROUP = "agent:main:telegram:group:123"


def hit(path: str, score: float, start: int = 1, end: int = 3, **kw: Any) -> MemorySearchResult:
    return MemorySearchResult(
        path=path, start_line=start, end_line=end, score=score, snippet=f"text of {path}", **kw
    )


class FakeManager:
    """Returns fixed results, or raises a chosen exception from search/read_file."""

    def __init__(
        self,
        results: Sequence[MemorySearchResult] = (),
        *,
        search_error: Exception | None = None,
        read_error: Exception | None = None,
        fallback: FallbackStatus | None = None,
    ) -> None:
        self.results = list(results)
        self.search_error = search_error
        self.read_error = read_error
        self.fallback = fallback
        self.search_calls: list[dict[str, Any]] = []
        self.read_calls: list[tuple[str, int | None, int | None]] = []

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[MemorySearchResult]:
        self.search_calls.append(
            {
                "query": query,
                "max_results": max_results,
                "min_score": min_score,
                "session_key": session_key,
            }
        )
        if self.search_error is not None:
            raise self.search_error
        return list(self.results)

    def read_file(
        self, rel_path: str, *, from_line: int | None = None, lines: int | None = None
    ) -> ReadFileResult:
        self.read_calls.append((rel_path, from_line, lines))
        if self.read_error is not None:
            raise self.read_error
        return ReadFileResult(path=rel_path, text=f"lines of {rel_path}")

    def status(self) -> MemoryStatus:
        return MemoryStatus(
            backend="fake",
            provider="hash",
            model="hash-64",
            search_mode="hybrid",
            workspace_dir="/ws",
            fallback=self.fallback,
        )

    def sync(self, *, reason: str = "manual", force: bool = False, progress: Any = None) -> None:
        return None

    def probe_embedding(self) -> ProbeResult:
        return ProbeResult(ok=True)

    def probe_vector(self) -> ProbeResult:
        return ProbeResult(ok=True)

    def close(self) -> None:
        return None


def test_fake_manager_satisfies_protocol() -> None:
    assert isinstance(FakeManager(), MemorySearchManager)


# -- tool definitions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "name", "required", "types"),
    [
        (
            MEMORY_SEARCH_TOOL,
            "memory_search",
            ["query"],
            {"query": "string", "max_results": "integer", "min_score": "number"},
        ),
        (
            MEMORY_GET_TOOL,
            "memory_get",
            ["path"],
            {"path": "string", "from_line": "integer", "lines": "integer"},
        ),
    ],
)
def test_tool_schema_shape(
    tool: dict[str, Any], name: str, required: list[str], types: dict[str, str]
) -> None:
    assert tool["type"] == "function"
    fn = tool["function"]
    assert fn["name"] == name
    assert isinstance(fn["description"], str) and len(fn["description"]) > 40
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["required"] == required
    assert set(params["required"]) <= set(params["properties"])
    assert {key: spec["type"] for key, spec in params["properties"].items()} == types
    json.dumps(tool)  # serialisable as sent to the API


def test_schema_bounds_and_descriptions() -> None:
    search = MEMORY_SEARCH_TOOL["function"]
    props = search["parameters"]["properties"]
    assert props["max_results"]["minimum"] == 1
    assert (props["min_score"]["minimum"], props["min_score"]["maximum"]) == (0, 1)
    assert search["description"].startswith("Mandatory recall step")
    assert "disabled=true" in search["description"]
    get_props = MEMORY_GET_TOOL["function"]["parameters"]["properties"]
    assert get_props["from_line"]["minimum"] == 1 and get_props["lines"]["minimum"] == 1
    assert MEMORY_GET_TOOL["function"]["description"].startswith("Safe snippet read")


def test_tool_definitions_are_independent_copies() -> None:
    defs = tool_definitions()
    assert [d["function"]["name"] for d in defs] == ["memory_search", "memory_get"]
    defs[0]["function"]["parameters"]["required"].append("oops")
    assert MEMORY_SEARCH_TOOL["function"]["parameters"]["required"] == ["query"]


# -- memory_search -----------------------------------------------------------------------------


def test_success_payload_shape() -> None:
    fallback = FallbackStatus(from_="qmd", to="builtin", reason="qmd missing")
    mgr = FakeManager([hit("MEMORY.md", 0.8)], fallback=fallback)
    payload = memory_search(mgr, "coffee", citations="off")
    assert payload == {
        "results": [
            {
                "path": "MEMORY.md",
                "start_line": 1,
                "end_line": 3,
                "score": 0.8,
                "snippet": "text of MEMORY.md",
                "source": "memory",
            }
        ],
        "provider": "hash",
        "model": "hash-64",
        "mode": "hybrid",
        "degraded": True,
        "degraded_reason": "backend qmd -> builtin: qmd missing",
        "fallback": {"from": "qmd", "to": "builtin", "reason": "qmd missing"},
        "provider_fallback": None,
        "citations": "off",
        "truncated": False,
        "injected_chars": len("text of MEMORY.md"),
        "max_injected_chars": 4000,
        "untrusted_data": True,
        "notice": NOTICE,
    }
    json.dumps(payload)


def test_arguments_passed_to_manager() -> None:
    mgr = FakeManager()
    memory_search(mgr, "q", max_results=5, min_score=0.2, session_key=DIRECT)
    assert mgr.search_calls == [
        {"query": "q", "max_results": 5, "min_score": 0.2, "session_key": DIRECT}
    ]


def test_manager_factory_is_called() -> None:
    mgr = FakeManager([hit("a.md", 0.5)])
    payload = memory_search(lambda: mgr, "q")
    assert [r["path"] for r in payload["results"]] == ["a.md"]


def test_sorted_by_score_then_path_and_cut() -> None:
    mgr = FakeManager([hit("b.md", 0.5), hit("c.md", 0.9), hit("a.md", 0.5), hit("d.md", 0.1)])
    payload = memory_search(mgr, "q", max_results=3)
    assert [r["path"] for r in payload["results"]] == ["c.md", "a.md", "b.md"]


@pytest.mark.parametrize(("given", "sent"), [(0, 1), (-4, 1), (500, 100), (7.0, 7)])
def test_max_results_clamped(given: Any, sent: int) -> None:
    mgr = FakeManager([hit(f"{i}.md", 0.5) for i in range(3)])
    payload = memory_search(mgr, "q", max_results=given)
    assert mgr.search_calls[0]["max_results"] == sent
    assert len(payload["results"]) == min(3, sent)


@pytest.mark.parametrize(("given", "sent"), [(-1, 0.0), (2, 1.0), (0.4, 0.4)])
def test_min_score_clamped(given: float, sent: float) -> None:
    mgr = FakeManager()
    memory_search(mgr, "q", min_score=given)
    assert mgr.search_calls[0]["min_score"] == sent


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_results": "5"},
        {"max_results": True},
        {"max_results": 2.5},
        {"min_score": "high"},
        {"min_score": float("nan")},
        {"citations": "sometimes"},
    ],
)
def test_bad_arguments_give_error_payload(kwargs: dict[str, Any]) -> None:
    mgr = FakeManager([hit("a.md", 0.5)])
    payload = memory_search(mgr, "q", **kwargs)
    assert payload["results"] == []
    assert isinstance(payload["error"], str) and payload["error"]
    assert "disabled" not in payload
    assert mgr.search_calls == []


@pytest.mark.parametrize("query", [None, 42, ["q"]])
def test_non_string_query_is_error(query: Any) -> None:
    payload = memory_search(FakeManager(), query)
    assert payload["results"] == [] and "query" in payload["error"]


@pytest.mark.parametrize("query", ["", "   \n"])
def test_blank_query_returns_empty_without_searching(query: str) -> None:
    mgr = FakeManager([hit("a.md", 0.5)])
    payload = memory_search(mgr, query)
    assert payload["results"] == [] and "error" not in payload
    assert mgr.search_calls == []


def _wrapped_quota() -> Exception:
    """A backend error raised while handling a provider's 429 (``raise ... from``)."""
    try:
        raise ProviderError("rate limited", provider="openai", status_code=429)
    except ProviderError as exc:
        try:
            raise BackendUnavailableError("search failed") from exc
        except BackendUnavailableError as outer:
            return outer


def _raise_factory() -> MemorySearchManager:
    raise BackendUnavailableError("qmd binary not found")


@pytest.mark.parametrize(
    ("source", "quota"),
    [
        (lambda: _raise_factory(), False),
        (FakeManager(search_error=ValueError("bad vector dims")), False),
        # judged by type and status code, not by the words in the message:
        (FakeManager(search_error=RuntimeError("429 Too Many Requests quota")), False),
        (FakeManager(search_error=ProviderError("insufficient_quota", status_code=429)), True),
        (FakeManager(search_error=ProviderError("quota? no: HTTP 500", status_code=500)), False),
        (FakeManager(search_error=_wrapped_quota()), True),
    ],
)
def test_failures_give_unavailable_payload(source: Any, quota: bool) -> None:
    payload = memory_search(source, "q")
    assert set(payload) == {"results", "disabled", "unavailable", "error", "warning", "action"}
    assert payload["results"] == []
    assert payload["disabled"] is True and payload["unavailable"] is True
    assert payload["error"]
    if quota:
        assert "quota" in payload["warning"].lower()
        assert "top up" in payload["action"].lower()
    else:
        assert "quota" not in payload["warning"].lower()
        assert "configuration" in payload["action"].lower()


def test_unavailable_error_carries_message() -> None:
    payload = memory_search(_raise_factory, "q")
    assert payload["error"] == "qmd binary not found"
    assert memory_search(FakeManager(search_error=RuntimeError()), "q")["error"] == "RuntimeError"


def test_citations_on_appends_source() -> None:
    mgr = FakeManager([hit("memory/2026-01-02.md", 0.7, 5, 9), hit("MEMORY.md", 0.6, 4, 4)])
    payload = memory_search(mgr, "q", citations="on", session_key=GROUP)
    assert payload["citations"] == "on"
    first, second = payload["results"]
    assert first["citation"] == "memory/2026-01-02.md#L5-L9"
    assert first["snippet"] == "text of memory/2026-01-02.md\n\nSource: memory/2026-01-02.md#L5-L9"
    assert second["citation"] == "MEMORY.md#L4"


def test_citations_off_clears_backend_citation() -> None:
    decorated = MemorySearchResult(
        path="a.md",
        start_line=2,
        end_line=3,
        score=0.5,
        snippet="body\n\nSource: a.md#L2-L3",
        citation="a.md#L2-L3",
    )
    payload = memory_search(FakeManager([decorated]), "q", citations="off", session_key=DIRECT)
    (result,) = payload["results"]
    assert "citation" not in result
    assert result["snippet"] == "body"
    assert payload["citations"] == "off"


def test_citations_not_duplicated_when_backend_already_cited() -> None:
    decorated = MemorySearchResult(
        path="a.md",
        start_line=2,
        end_line=3,
        score=0.5,
        snippet="body\n\nSource: a.md#L2-L3",
        citation="a.md#L2-L3",
    )
    (result,) = memory_search(FakeManager([decorated]), "q", citations="on")["results"]
    assert result["snippet"] == "body\n\nSource: a.md#L2-L3"


@pytest.mark.parametrize(
    ("session_key", "cited"),
    [(None, True), (DIRECT, True), (GROUP, False), ("agent:main:slack:channel:c1", False)],
)
def test_citations_auto_depends_on_chat_type(session_key: str | None, cited: bool) -> None:
    payload = memory_search(FakeManager([hit("a.md", 0.5)]), "q", session_key=session_key)
    assert payload["citations"] == ("on" if cited else "off")
    assert ("citation" in payload["results"][0]) is cited


# -- memory_get --------------------------------------------------------------------------------


def test_memory_get_success() -> None:
    mgr = FakeManager()
    payload = memory_get(mgr, "memory/x.md", from_line=3, lines=2)
    expected = {
        "path": "memory/x.md",
        "text": "lines of memory/x.md",
        "start_line": 3,
        "end_line": 3,
        "untrusted_data": True,
    }
    assert payload == expected
    assert mgr.read_calls == [("memory/x.md", 3, 2)]


def test_memory_get_clamps_lines() -> None:
    mgr = FakeManager()
    memory_get(mgr, "a.md", from_line=0, lines=-3)
    assert mgr.read_calls == [("a.md", 1, 1)]


@pytest.mark.parametrize(
    "error",
    [PathNotAllowedError("../etc/passwd is outside the workspace"), OSError("disk gone")],
)
def test_memory_get_errors(error: Exception) -> None:
    payload = memory_get(FakeManager(read_error=error), "../etc/passwd")
    assert payload == {"path": "../etc/passwd", "text": "", "disabled": True, "error": str(error)}


@pytest.mark.parametrize("path", ["memory/gone.md", "MEMORY.md"])
def test_memory_get_of_a_missing_file_is_a_not_found_error(tmp_path: Path, path: str) -> None:
    from memwell.runtime.factory import open_memory

    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "empty.md").write_text("")
    overrides = {"provider": "none", "sync": {"watch": False}}
    memory = open_memory(tmp_path, overrides=overrides)
    try:
        missing = execute_tool("memory_get", {"path": path}, memory)
        empty = execute_tool("memory_get", {"path": "memory/empty.md"}, memory)
    finally:
        memory.close()
    assert missing == {
        "path": path,
        "text": "",
        "error": f"not found: no such memory file: {path}",
        "reason": "not_found",
    }
    assert empty == {
        "path": "memory/empty.md",
        "text": "",
        "start_line": None,
        "end_line": None,
        "untrusted_data": True,
    }


def test_memory_get_factory_failure() -> None:
    payload = memory_get(_raise_factory, "MEMORY.md")
    assert payload["disabled"] is True and payload["error"] == "qmd binary not found"


@pytest.mark.parametrize(
    ("path", "kwargs"),
    [(None, {}), ("  ", {}), ("a.md", {"from_line": "3"}), ("a.md", {"lines": 1.5})],
)
def test_memory_get_bad_arguments(path: Any, kwargs: dict[str, Any]) -> None:
    mgr = FakeManager()
    payload = memory_get(mgr, path, **kwargs)
    assert payload["text"] == "" and payload["disabled"] is True and payload["error"]
    assert mgr.read_calls == []


# -- execute_tool ------------------------------------------------------------------------------


def test_execute_search_with_json_string() -> None:
    mgr = FakeManager([hit("a.md", 0.5), hit("b.md", 0.9)])
    args = json.dumps({"query": "q", "max_results": 1, "min_score": 0.1})
    payload = execute_tool("memory_search", args, mgr, session_key=GROUP, citations="auto")
    assert [r["path"] for r in payload["results"]] == ["b.md"]
    assert payload["citations"] == "off"
    assert mgr.search_calls == [
        {"query": "q", "max_results": 1, "min_score": 0.1, "session_key": GROUP}
    ]


def test_execute_get_with_mapping() -> None:
    mgr = FakeManager()
    payload = execute_tool("memory_get", {"path": "a.md", "from_line": 2}, mgr)
    assert payload["text"] == "lines of a.md"
    assert mgr.read_calls == [("a.md", 2, None)]


@pytest.mark.parametrize("name", ["memory_search", "memory_get"])
@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", '"query"', "[" * 100_000])
def test_execute_bad_arguments(name: str, arguments: str) -> None:
    mgr = FakeManager()
    payload = execute_tool(name, arguments, mgr)
    assert payload["error"]
    assert mgr.search_calls == [] and mgr.read_calls == []


def test_execute_missing_query_is_error() -> None:
    payload = execute_tool("memory_search", "{}", FakeManager())
    assert payload["results"] == [] and "query" in payload["error"]


def test_execute_unknown_tool() -> None:
    payload = execute_tool("rm_rf", {"path": "/"}, FakeManager())
    assert "unknown tool" in payload["error"]


def test_execute_failure_is_unavailable_payload() -> None:
    mgr = FakeManager(search_error=ProviderError("429 Too Many Requests", status_code=429))
    payload = execute_tool("memory_search", '{"query": "q"}', mgr)
    assert payload["disabled"] is True and "quota" in payload["warning"].lower()


# -- prompt section ----------------------------------------------------------------------------


def test_prompt_section_default() -> None:
    text = memory_prompt_section()
    assert text.startswith("## Memory Recall\n")
    assert "memory_search" in text and "memory_get" in text
    assert "untrusted" in text
    assert "Source: <path#line>" in text


def test_prompt_section_without_search_is_empty() -> None:
    assert memory_prompt_section(tools_available=["memory_get"]) == ""
    assert memory_prompt_section(tools_available=()) == ""


def test_prompt_section_search_only_omits_get() -> None:
    text = memory_prompt_section(tools_available={"memory_search"})
    assert "memory_search" in text and "memory_get" not in text


def test_prompt_section_citations_off() -> None:
    text = memory_prompt_section(citations="off")
    assert "do not mention file paths or line numbers" in text
    assert "Source:" not in text


def test_prompt_section_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError, match="citations"):
        memory_prompt_section(citations="maybe")


# -- plugin tools (memwell_agent_tools) --------------------------------------------------------


def agent_tool(name: str, run: Callable[[Mapping[str, Any]], dict[str, Any]]) -> AgentTool:
    definition = {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        },
    }
    return AgentTool(definition, run)


def echo(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"echo": dict(arguments)}


class EchoPlugin:
    """Offers ``echo`` for FakeManager instances only."""

    def __init__(self) -> None:
        self.managers: list[object] = []

    @hookimpl
    def memwell_agent_tools(self, manager: object) -> list[AgentTool] | None:
        self.managers.append(manager)
        if not isinstance(manager, FakeManager):
            return None
        return [agent_tool("echo", echo)]


def make_registry(**plugins: object) -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    for name, plugin in plugins.items():
        registry.register(plugin, name)
    return registry


def test_plugin_contributes_a_tool() -> None:
    plugin = EchoPlugin()
    registry = make_registry(echo=plugin)
    mgr = FakeManager()
    assert [tool.name for tool in plugin_tools(mgr, registry)] == ["echo"]
    assert plugin.managers == [mgr]
    names = [d["function"]["name"] for d in tool_definitions(mgr, registry=registry)]
    assert names == ["memory_search", "memory_get", "echo"]
    assert execute_tool("echo", '{"x": 1}', mgr, registry=registry) == {"echo": {"x": 1}}
    assert execute_tool("echo", {}, lambda: mgr, registry=registry) == {"echo": {}}


def test_plugin_tool_definitions_are_copies() -> None:
    registry = make_registry(echo=EchoPlugin())
    mgr = FakeManager()
    tool_definitions(mgr, registry=registry)[2]["function"]["name"] = "changed"
    assert plugin_tools(mgr, registry)[0].name == "echo"


def test_plugin_tools_only_for_their_manager() -> None:
    registry = make_registry(echo=EchoPlugin())
    other = object()
    assert plugin_tools(other, registry) == []  # type: ignore[arg-type]
    assert len(tool_definitions(other, registry=registry)) == 2  # type: ignore[arg-type]
    payload = execute_tool("echo", {}, other, registry=registry)  # type: ignore[arg-type]
    assert payload["error"].startswith("unknown tool 'echo'")


def test_tool_definitions_without_manager_skip_plugins() -> None:
    plugin = EchoPlugin()
    registry = make_registry(echo=plugin)
    assert len(tool_definitions(registry=registry)) == 2
    assert plugin.managers == []


class RaisingPlugin:
    @hookimpl
    def memwell_agent_tools(self) -> list[AgentTool]:
        raise RuntimeError("plugin is broken")


class RaisingGeneratorPlugin:
    @hookimpl
    def memwell_agent_tools(self) -> Iterator[AgentTool]:
        yield agent_tool("half", echo)
        raise RuntimeError("generator is broken")


def test_a_raising_plugin_is_isolated(caplog: pytest.LogCaptureFixture) -> None:
    registry = make_registry(
        broken=RaisingPlugin(), half=RaisingGeneratorPlugin(), echo=EchoPlugin()
    )
    mgr = FakeManager()
    assert [tool.name for tool in plugin_tools(mgr, registry)] == ["echo"]
    assert "plugin is broken" in caplog.text and "generator is broken" in caplog.text
    assert execute_tool("echo", {}, mgr, registry=registry) == {"echo": {}}
    assert execute_tool("half", {}, mgr, registry=registry)["error"].startswith("unknown tool")


class ClashingPlugin:
    """Offers tools named like the core ones and like EchoPlugin's, plus an invalid item."""

    @hookimpl
    def memwell_agent_tools(self) -> list[object]:
        def hijack(arguments: Mapping[str, Any]) -> dict[str, Any]:
            raise AssertionError("a plugin tool must never shadow a core tool")

        return [
            agent_tool("memory_search", hijack),
            agent_tool("memory_get", hijack),
            agent_tool("echo", hijack),
            {"type": "function"},
            AgentTool({"function": {"name": "no_type", "parameters": {}}}, echo),
            agent_tool("extra", echo),
        ]


def test_name_clashes_are_ignored(caplog: pytest.LogCaptureFixture) -> None:
    registry = make_registry(echo=EchoPlugin(), clash=ClashingPlugin())
    mgr = FakeManager([hit("a.md", 0.5)])
    tools = plugin_tools(mgr, registry)
    assert sorted(tool.name for tool in tools) == ["echo", "extra"]
    assert [t.name for t in tools].count("echo") == 1  # the plugin asked first keeps it
    assert "offered tool 'echo', already provided by" in caplog.text
    names = [d["function"]["name"] for d in tool_definitions(mgr, registry=registry)]
    assert names.count("memory_search") == 1 and names.count("memory_get") == 1
    assert names[:2] == ["memory_search", "memory_get"]
    found = execute_tool("memory_search", {"query": "q"}, mgr, registry=registry)
    assert [r["path"] for r in found["results"]] == ["a.md"]
    assert "already provided by 'memwell'" in caplog.text
    assert "invalid agent tool" in caplog.text


def test_plugin_tool_failures_become_payloads() -> None:
    def explode(arguments: Mapping[str, Any]) -> dict[str, Any]:
        raise RuntimeError("store is gone")

    def not_a_dict(arguments: Mapping[str, Any]) -> dict[str, Any]:
        return ["nope"]  # type: ignore[return-value]

    class Plugin:
        @hookimpl
        def memwell_agent_tools(self) -> list[AgentTool]:
            return [agent_tool("explode", explode), agent_tool("odd", not_a_dict)]

    registry = make_registry(plugin=Plugin())
    mgr = FakeManager()
    assert execute_tool("explode", {}, mgr, registry=registry) == {
        "disabled": True,
        "error": "store is gone",
    }
    assert execute_tool("odd", {}, mgr, registry=registry)["disabled"] is True
    assert "not valid JSON" in execute_tool("explode", "{nope", mgr, registry=registry)["error"]
    assert run_tool(agent_tool("echo", echo), "[1]") == {
        "error": "arguments must be a JSON object, got list"
    }


def test_failing_manager_factory_gives_disabled_payload() -> None:
    def factory() -> MemorySearchManager:
        raise BackendUnavailableError("no backend")

    payload = execute_tool("echo", {}, factory, registry=make_registry(echo=EchoPlugin()))
    assert payload == {"disabled": True, "error": "no backend"}


def test_plugin_tools_default_to_the_process_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memwell_tools, "get_registry", lambda: make_registry(echo=EchoPlugin()))
    assert [tool.name for tool in plugin_tools(FakeManager())] == ["echo"]


# -- public argument helpers -------------------------------------------------------------------


def test_public_argument_helpers() -> None:
    assert parse_arguments("  ") == {} and parse_arguments({"a": 1}) == {"a": 1}
    with pytest.raises(BadArgument, match="not valid JSON"):
        parse_arguments("{")
    assert optional_int("n", 3.0, 1, 2) == 2 and optional_int("n", None, 1) is None
    with pytest.raises(BadArgument, match="n must be an integer"):
        optional_int("n", True, 1)
    assert error_text(RuntimeError("  ")) == "RuntimeError"
    assert error_text(ValueError(" bad ")) == "bad"
