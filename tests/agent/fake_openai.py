"""A scripted OpenAI-compatible server on 127.0.0.1 for tests (FastAPI + uvicorn in a thread)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeOpenAI:
    """`script(body) -> dict` decides each answer: {"status", "json", "delay"} or a chat message
    dict ({"content", "tool_calls"}) / a Responses output list ({"output": [...]})."""

    def __init__(self, script, served=("fake-model",)):
        self.script = script
        self.calls: list[dict[str, Any]] = []
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict:
            return {"object": "list", "data": [{"id": m, "object": "model"} for m in served]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            return await self._answer(await request.json(), chat=True)

        @app.post("/v1/responses")
        async def responses(request: Request):
            return await self._answer(await request.json(), chat=False)

        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    async def _answer(self, body: dict, chat: bool):
        self.calls.append(body)
        spec = self.script(body, len(self.calls))
        if spec.get("delay"):
            await asyncio.sleep(spec["delay"])
        if "status" in spec:
            return JSONResponse(spec.get("json", {"error": "scripted"}), status_code=spec["status"])
        if chat:
            msg = {"role": "assistant", "content": spec.get("content"), "tool_calls": spec.get("tool_calls")}
            finish = spec.get("finish_reason", "tool_calls" if spec.get("tool_calls") else "stop")
            return _json({"id": "c", "object": "chat.completion",
                          "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        return _json({"id": "r", "object": "response", "output": spec.get("output", []),
                      "usage": {"input_tokens": 10, "output_tokens": 5}})

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started and time.time() < deadline:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


def _json(payload: dict) -> Response:
    """ASCII JSON, as real servers send it: a lone surrogate in scripted text goes out as a \\ud800
    escape instead of failing to encode (which would turn a fuzzed answer into an HTTP 500)."""
    return Response(json.dumps(payload, ensure_ascii=True), media_type="application/json")


def tool_call(name: str, arguments: Any, call_id: str = "call_1") -> dict:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
