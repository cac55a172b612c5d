"""`openai:` policy: any OpenAI-compatible server, Chat Completions or Responses API.

Retries with exponential backoff and jitter on connection errors, timeouts, 429 and 5xx; other
4xx answers fail the turn at once with the server's message. A server that refuses tool calls (vLLM
started without a tool parser) also sets `unusable`, the error with the fix, so that an evaluation
stops at once instead of scoring rollouts that all failed the same way. A semaphore bounds
concurrent requests. The API key comes from an environment variable (OPENAI_API_KEY by default),
never from a config file.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from typing import Any
from urllib.parse import urlsplit

from officegym.agent.messages import chat_messages_to_responses_items
from officegym.agent.tool_call_parser import parse_text_tool_calls
from officegym.core.policy import Completion, Policy, PolicyRequest, PolicyUnusable, SamplingParams
from officegym.core.toolcalls import ToolCallParseError, parse_tool_call

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
# What servers answer when they cannot take tools: vLLM without --enable-auto-tool-choice ('"auto" tool
# choice requires --enable-auto-tool-choice and --tool-call-parser to be set'), llama.cpp without
# --jinja ("tools param requires --jinja flag"), Ollama ("... does not support tools").
TOOLS_REFUSED = ("tool choice", "tool_choice", "tool-call-parser", "tool_call_parser", "tools param requires",
                 "does not support tools", "tools are not supported", "tool calls are not supported")


class ToolCallsRefused(PolicyUnusable):
    """The server answers requests that offer tools with an error: no rollout can run."""


def tools_refused(status: int, text: str, url: str) -> ToolCallsRefused | None:
    """The error that stops the run when an answer says the server takes no tool calls, with the fix."""
    lowered = text.lower()
    if status not in (400, 422) or not any(sign in lowered for sign in TOOLS_REFUSED):
        return None
    if "enable-auto-tool-choice" in lowered:
        fix = "restart vLLM with --enable-auto-tool-choice --tool-call-parser hermes (or the parser for your model)"
    else:
        fix = "serve a model on a server that supports tool calls (vLLM: --enable-auto-tool-choice --tool-call-parser hermes)"
    return ToolCallsRefused(f"the model server at {url} refuses tool calls (HTTP {status}: {text[:300]}); {fix}. "
                            "The evaluation stopped: every rollout would have failed the same way")


def checked_base_url(url: str) -> str:
    """`url` without a trailing slash if it is an http(s) URL with a host; ValueError saying so otherwise."""
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"the model server's base URL must be http(s)://HOST[:PORT]/..., e.g. "
                         f"http://127.0.0.1:8000/v1, got {url!r}")
    return url.rstrip("/")


class OpenAIPolicy(Policy):
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api: str = "chat",
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        concurrency: int = 16,
        extra_body: dict[str, Any] | None = None,
    ):
        if api not in ("chat", "responses"):
            raise ValueError("api must be 'chat' or 'responses'")
        self.model = model
        self.base_url = checked_base_url(base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1")
        self.api = api
        self.api_key = os.environ.get(api_key_env, "")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.extra_body = extra_body or {}
        self.name = f"openai:{model}"
        self._gate = asyncio.Semaphore(max(1, concurrency))
        self._client = None
        self.stats: dict[str, float] = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self.unusable: ToolCallsRefused | None = None  # why no request of this run can succeed

    def _http(self):
        import httpx

        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.AsyncClient(timeout=self.timeout, headers=headers)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def preflight(self) -> str | None:
        """A quick check that the server answers (GET /models): an error message, or None."""
        import httpx

        url = self.base_url + "/models"
        try:
            resp = await self._http().get(url, timeout=min(10.0, self.timeout))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return f"cannot reach the model server at {self.base_url}: {type(exc).__name__}: {exc}"
        if resp.status_code == 200:
            try:
                ids = {m.get("id") for m in resp.json().get("data", [])}
            except (ValueError, AttributeError):
                return None
            if ids and self.model not in ids:
                return f"the server at {self.base_url} does not serve model {self.model!r} (it serves: {', '.join(sorted(map(str, ids)))})"
        return None

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return list(await asyncio.gather(*(self._one(r, params) for r in requests)))

    # -- one request -------------------------------------------------------------------------------

    def _body(self, r: PolicyRequest, params: SamplingParams) -> tuple[str, dict[str, Any]]:
        common: dict[str, Any] = {"model": self.model, "temperature": params.temperature, "top_p": params.top_p}
        if self.api == "chat":
            body = {
                **common,
                "messages": [_chat_message(m) for m in r.messages],
                "max_tokens": params.max_new_tokens,
            }
            if r.tools:
                body["tools"] = [t.to_chat_tool() for t in r.tools]
            if params.seed is not None:
                body["seed"] = params.seed
            if params.stop:
                body["stop"] = params.stop
            path = "/chat/completions"
        else:
            body = {
                **common,
                "input": chat_messages_to_responses_items(r.messages),
                "max_output_tokens": params.max_new_tokens,
                "parallel_tool_calls": True,
            }
            if r.tools:
                body["tools"] = [t.to_schema() for t in r.tools]
            path = "/responses"
        body.update(self.extra_body)
        return self.base_url + path, body

    async def _one(self, r: PolicyRequest, params: SamplingParams) -> Completion:
        import httpx

        start = time.perf_counter()
        try:
            url, body = self._body(r, params)
            content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (ValueError, TypeError) as exc:  # NaN or a lone surrogate in the conversation
            return Completion(finish_reason="error", error=f"cannot send this conversation as JSON: {exc}", seconds=0.0)
        last_error = ""
        async with self._gate:
            for attempt in range(self.max_retries + 1):
                if attempt:
                    await asyncio.sleep(self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random()))
                try:
                    resp = await self._http().post(url, content=content, headers={"content-type": "application/json"})
                except httpx.TimeoutException:
                    last_error = f"timed out after {self.timeout:g} s waiting for {url}"
                    continue
                except httpx.HTTPError as exc:
                    last_error = f"cannot reach {url}: {type(exc).__name__}: {exc}"
                    continue
                if resp.status_code in RETRY_STATUS:
                    last_error = f"HTTP {resp.status_code} from {url}: {resp.text[:300]}"
                    continue
                if resp.status_code >= 400:
                    if r.tools and self.unusable is None:
                        self.unusable = tools_refused(resp.status_code, resp.text, self.base_url)
                    return Completion(finish_reason="error", error=f"HTTP {resp.status_code} from {url}: {resp.text[:500]}",
                                      seconds=time.perf_counter() - start)
                try:
                    data = resp.json()
                    completion = self._parse(data)
                except (ValueError, KeyError, IndexError, TypeError, ToolCallParseError) as exc:
                    return Completion(finish_reason="error", error=f"unreadable answer from {url}: {exc}",
                                      seconds=time.perf_counter() - start)
                completion.seconds = time.perf_counter() - start
                self.stats["calls"] += 1
                self.stats["prompt_tokens"] += completion.prompt_tokens or 0
                self.stats["completion_tokens"] += completion.completion_tokens or 0
                return completion
        return Completion(finish_reason="error", error=f"{last_error} (gave up after {self.max_retries + 1} attempts)",
                          seconds=time.perf_counter() - start)

    def _parse(self, data: dict[str, Any]) -> Completion:
        usage = data.get("usage") or {}
        if self.api == "chat":
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content") or ""
            calls = [parse_tool_call(tc) for tc in message.get("tool_calls") or []]
            finish = "length" if choice.get("finish_reason") == "length" else "stop"
            prompt_tokens, completion_tokens = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
        else:
            text_parts, calls = [], []
            for item in data.get("output") or []:
                if item.get("type") == "function_call":
                    calls.append(parse_tool_call(item))
                elif item.get("type") == "message":
                    for part in item.get("content") or []:
                        if isinstance(part, dict) and part.get("type") in ("output_text", "text"):
                            text_parts.append(part.get("text", ""))
            text = "".join(text_parts)
            finish = "length" if (data.get("incomplete_details") or {}).get("reason") == "max_output_tokens" else "stop"
            prompt_tokens, completion_tokens = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        invalid: list[str] = []
        if not calls and "<tool_call>" in text:
            # a server without a tool parser returns the model's raw text format
            parsed = parse_text_tool_calls(text)
            text, calls, invalid = parsed.content, parsed.calls, parsed.invalid
        return Completion(text=text, tool_calls=calls, invalid=invalid, finish_reason=finish,
                          prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def _chat_message(m: dict[str, Any]) -> dict[str, Any]:
    """Our message as the Chat Completions API accepts it."""
    if m.get("role") == "tool" and not m.get("tool_call_id"):
        return {"role": "user", "content": m.get("content", "")}  # a note about a malformed call
    out = {k: v for k, v in m.items() if v is not None}
    if out.get("role") == "assistant" and out.get("tool_calls"):
        out["tool_calls"] = [
            {**tc, "function": {**tc["function"], "arguments": _as_json(tc["function"].get("arguments"))}}
            for tc in out["tool_calls"]
        ]
        out.setdefault("content", None)
    return out


def _as_json(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
