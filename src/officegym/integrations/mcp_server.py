"""One task's session served over MCP with the official `mcp` SDK (`officegym mcp`).

An MCP client (an agent framework, an IDE, a chat app) sees the task's tools with their JSON
schemas, the task itself as the prompt `task` (and the resource `officegym://task`, its messages
as JSON), and one more tool, `submit`, that verifies the session's calls and returns the reward
and the verifier's evidence. Tool answers are the text officegym's own loop gives a model; an
unknown tool, bad arguments or a refusal (the tool's own message, e.g. an id that does not exist) come
back as a tool error (`isError`, with officegym's status in `_meta`), never a crash.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server import Server

from officegym.integrations.task_session import TaskSession

SUBMIT = "submit"
TASK_URI = "officegym://task"
_SUBMIT_DESCRIPTION = ("Finish the task: the calls made in this session are verified against the task's reference "
                       "solution, and the reward (1.0 when the outcome is right) comes back with the verifier's "
                       "evidence. Call it once, when done; the session is closed after it.")


def submit_name(ts: TaskSession) -> str:
    """`submit`, unless the task has a tool of that name (then `officegym_submit`)."""
    return SUBMIT if SUBMIT not in ts.tool_names else f"officegym_{SUBMIT}"


def _messages(ts: TaskSession) -> list[dict[str, Any]]:
    return [m for m in ts.task.input if isinstance(m, dict)]


def _system_text(ts: TaskSession) -> str | None:
    texts = [m.get("content") for m in _messages(ts) if m.get("role") in ("system", "developer")]
    texts = [t for t in texts if isinstance(t, str) and t]
    return "\n\n".join(texts) or None


def build_server(ts: TaskSession, name: str = "officegym") -> Server:
    """The MCP server of one task session (the SDK's low-level `Server`: our tools come with their
    own schemas, and arguments reach the environment as sent, so its own messages answer bad ones)."""
    submit = submit_name(ts)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool(name=s.name, description=s.description, input_schema=s.parameters) for s in ts.specs]
        tools.append(types.Tool(name=submit, description=_SUBMIT_DESCRIPTION,
                                input_schema={"type": "object", "properties": {}}))
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == submit:
            summary = ts.summary()
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(summary, default=str))],
                                        structured_content=json.loads(json.dumps(summary, default=str)))
        result = ts.execute(params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.text)],
                                    is_error=not result.ok,
                                    meta={"officegym/status": result.status})

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="task", description=f"task {ts.task.id}")])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != "task":
            raise ValueError(f"no prompt named {params.name!r}: this server has one, 'task'")
        users = [m.get("content") for m in _messages(ts) if m.get("role") == "user"]
        messages = [types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
                    for text in users if isinstance(text, str)]
        return types.GetPromptResult(description=_system_text(ts), messages=messages)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(
            name="task", uri=TASK_URI, mime_type="application/json",
            description="the task's messages (system and user), as the task row holds them")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if str(params.uri) != TASK_URI:
            raise ValueError(f"no resource {params.uri}: this server has one, {TASK_URI}")
        text = json.dumps({"id": ts.task.id, "messages": _messages(ts)}, default=str)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=TASK_URI, mime_type="application/json",
                                                                             text=text)])

    return Server(name, instructions=_system_text(ts), on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_prompts=list_prompts, on_get_prompt=get_prompt, on_list_resources=list_resources,
                  on_read_resource=read_resource)


async def serve_stdio(server: Server) -> None:
    """Serve over stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(server: Server, port: int, host: str = "127.0.0.1") -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted."""
    import uvicorn

    uvicorn.run(server.streamable_http_app(host=host), host=host, port=port, log_level="warning")
