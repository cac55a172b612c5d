"""`POST /run`: NeMo Gym's simple agent over an OpenAI-compatible model server, one verified rollout."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections import OrderedDict
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from officegym.agent.loop import LoopConfig, rollout
from officegym.core.environment import BaseEnvironment
from officegym.core.policy import Completion, PolicyRequest, SamplingParams
from officegym.core.rollout_row import make_row, officegym_record, response_of
from officegym.server.config import MAX_RUN_STEPS, ServerConfig
from officegym.server.protocol import BadRequest, detail, json_response, read_object, require
from officegym.server.rows import check_params, resolve_mode, task_from_row, verify_answer

RUN_KEYS = ("model_server_url", "model", "api", "max_steps", "mode")
# What of the `officegym` record /run answers with (--evidence), in this order.
EVIDENCE_KEYS = ("verdict", "stop_reason", "turns", "call_status", "invalid_fragments", "seconds", "env_seconds")


class SimpleAgent:
    """Plays episodes of `env` with a model server's policy; keeps one HTTP policy per server/model."""

    def __init__(self, env: BaseEnvironment, config: ServerConfig, counts: dict[str, int]):
        self.env = env
        self.config = config
        self.counts = counts
        self._policies: OrderedDict[tuple[int, str, str, str], Any] = OrderedDict()

    async def run(self, request: Request) -> Response:
        row = await read_object(request)
        check_params(require(row, "responses_create_params", dict, "dictionary"), for_run=True)
        cfg = self.config
        url = row.get("model_server_url", cfg.model_server_url)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise BadRequest(detail("model_server_url must be the http(s) base URL of an OpenAI-compatible "
                                    "server, e.g. http://127.0.0.1:8000/v1", 422))
        rcp = row["responses_create_params"]
        model = row.get("model") or rcp.get("model") or cfg.model
        if not isinstance(model, str) or not model:
            raise BadRequest(detail("model: give the model name (in the body, in responses_create_params.model, "
                                    "or with --model when starting the server)", 422))
        api = row.get("api", cfg.model_api)
        if api not in ("chat", "responses"):
            raise BadRequest(detail("api must be 'chat' or 'responses'", 422))
        max_steps = row.get("max_steps", cfg.max_steps)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or not 1 <= max_steps <= MAX_RUN_STEPS:
            raise BadRequest(detail(f"max_steps must be an integer from 1 to {MAX_RUN_STEPS}", 422))
        mode = resolve_mode(self.env, cfg.mode, row.get("mode"))
        params = sampling(rcp)
        try:  # what a model server is sent must be strict JSON in UTF-8
            json.dumps(rcp, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (UnicodeEncodeError, ValueError, RecursionError) as exc:
            raise BadRequest(detail(f"responses_create_params cannot be sent to a model server: {exc}", 422)) from None
        task_row = {k: v for k, v in row.items() if k not in RUN_KEYS}
        task = task_from_row(task_row)
        try:
            policy = self._policy(url, model, api)
        except ValueError as exc:  # a URL that only looks like one (http://[::)
            raise BadRequest(detail(str(exc), 422)) from None

        async def submit(req: PolicyRequest) -> Completion:
            try:
                return (await policy.complete([req], params))[0]
            except Exception as exc:  # a policy that fails outright fails this episode, not the server
                return Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}")

        # NeMo Gym's simple agent feeds tool outputs back whole, so nothing is truncated here.
        config = LoopConfig(max_steps=max_steps, max_tool_output_chars=None, mode=mode, params=params)
        traj = await rollout(self.env, task, submit, config, policy_name=f"openai:{model}")
        self.counts["run"] += 1
        if traj.error:
            return detail(f"model server error: {traj.error}", 502)
        out = verify_answer(make_row(task_row, response_of(traj), traj.reward), traj.reward)
        if cfg.evidence:
            record = officegym_record(task, traj)
            out["officegym"] = {k: record[k] for k in EVIDENCE_KEYS}
        return json_response(out)

    def _policy(self, url: str, model: str, api: str):
        from officegym.agent.openai_compat import OpenAIPolicy

        # Keyed by event loop too: a policy's HTTP client belongs to the loop that made it.
        key = (id(asyncio.get_running_loop()), url, model, api)
        policy = self._policies.get(key)
        if policy is None:
            policy = OpenAIPolicy(model, base_url=url, api=api, **(self.config.policy_options or {}))
            self._policies[key] = policy
            while len(self._policies) > 16:
                _, old = self._policies.popitem(last=False)
                asyncio.get_running_loop().create_task(old.aclose())
        else:
            self._policies.move_to_end(key)
        return policy

    async def aclose(self) -> None:
        for policy in self._policies.values():
            with contextlib.suppress(Exception):
                await policy.aclose()
        self._policies.clear()


def sampling(rcp: dict[str, Any]) -> SamplingParams:
    """The sampling settings NeMo Gym's agent forwards from responses_create_params."""
    params = SamplingParams()
    for key, attr in (("temperature", "temperature"), ("top_p", "top_p"), ("max_output_tokens", "max_new_tokens")):
        value = rcp.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise BadRequest(detail(f"responses_create_params.{key} must be a non-negative number", 422))
        setattr(params, attr, int(value) if attr == "max_new_tokens" else float(value))
    return params

