"""`random:SEED` makes the same calls in every process (a Ray worker, a rerun), whatever the process's
string hashing: it once filled arguments in the order of a set of names."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import asyncio, json
from officegym.agent.scripted import RandomPolicy
from officegym.core.policy import PolicyRequest, SamplingParams
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.core.task import Task

policy = RandomPolicy(seed=3, max_calls=3)
out = []
for i in range(20):
    task = Task(id=f"t{i}", input=[{"role": "user", "content": f"mail ana.lee@acme.com about item {i}"}])
    request = PolicyRequest(messages=task.input, tools=list(TOOL_SPECS), task=task)
    (completion,) = asyncio.run(policy.complete([request], SamplingParams()))
    out.append([[c.name, list(c.arguments.items())] for c in completion.tool_calls])
print(json.dumps(out))
"""


def _calls(hash_seed: str) -> list:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_random_policy_calls_do_not_depend_on_string_hashing():
    first, second = _calls("1"), _calls("2")
    assert first == second
    assert any(len(args) > 1 for calls in first for _, args in calls)  # argument order is part of what is compared
