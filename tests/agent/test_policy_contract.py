"""The policy contract: a new backend is its Policy class and one BACKENDS entry, and runs through
`officegym eval`; specs are parsed once (PolicySpec); generic code reads the capabilities Policy
declares instead of probing for them."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from typer.testing import CliRunner

import officegym
from officegym.agent.policies import BACKENDS, Backend, PolicySpec, PolicySpecError, make_policy, usage
from officegym.agent.ray_workers import runs_a_model
from officegym.cli import app
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.pipeline.evaluation import policy_spec

BUILT: list[Replay] = []


class Replay(Policy):
    """Makes the task's ground-truth calls in its first turn, then answers with its spec's text."""

    def __init__(self, answer: str):
        self.answer = answer
        self.name = f"replay:{answer}"
        self.stats = {"calls": 0, "completion_tokens": 0}
        self.closed = 0
        BUILT.append(self)

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        self.stats["calls"] += 1
        out = []
        for r in requests:
            calls = list(r.task.ground_truth) if r.turn == 0 and r.task is not None else []
            out.append(Completion(text="" if calls else self.answer, tool_calls=calls))
        return out

    async def aclose(self) -> None:
        self.closed += 1


def _replay_backend(monkeypatch) -> None:
    monkeypatch.setitem(BACKENDS, "replay", Backend(lambda spec, options: Replay(spec.arg or "Done."), "replay[:ANSWER]"))
    BUILT.clear()


def test_a_new_backend_is_one_class_and_one_table_entry(reference_dir, tmp_path, monkeypatch):
    _replay_backend(monkeypatch)
    assert "replay[:ANSWER]" in usage() and PolicySpec("replay:x").scripted
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text((reference_dir / "example.jsonl").read_text())
    out = tmp_path / "replay"
    res = CliRunner().invoke(app, ["eval", "--policy", "replay:All done.", "--tasks", str(tasks),
                                   "--world", str(reference_dir / "csv_data"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["accuracy"] == 1.0 and metrics["rollouts"] == 5
    assert json.loads((out / "run.json").read_text())["policy"] == "replay:All done."
    (policy,) = BUILT
    assert policy.stats["calls"] >= 2 and policy.closed >= 1  # answered turns; closed by the one lifecycle
    # the pipeline passes a scripted spec through as it is, as it does the built-in ones
    assert policy_spec("replay:x", "hf") == "replay:x" and policy_spec("oracle", "vllm") == "oracle"


def test_specs_are_parsed_by_the_table():
    assert (PolicySpec("smollm2-135m").kind, PolicySpec("smollm2-135m").arg) == ("hf", "smollm2-135m")
    assert PolicySpec("random:3").arg == "3" and PolicySpec("openai:a:b").arg == "a:b"
    for spec, loads in (("hf:x", True), ("vllm:y", True), ("smollm2-135m", True), ("openai:m", False), ("oracle", False),
                        ("role-random:2", False), ("nosuch", False)):
        assert PolicySpec(spec).loads_model is loads and runs_a_model(spec) is loads
    assert policy_spec("smollm2-135m", "vllm") == "vllm:smollm2-135m" and policy_spec("/m", "hf") == "hf:/m"
    assert usage() == ("oracle, noop, random[:SEED], greedy, rule, role-random[:SEED], openai:MODEL, "
                       "openai-responses:MODEL, hf:PATH_OR_ID, smollm2-135m or vllm:MODEL")
    try:
        make_policy("openai")
    except PolicySpecError as exc:
        assert "openai:MODEL needs a model name" in str(exc)
    else:
        raise AssertionError("openai without a model must fail")
    assert make_policy("random", seed=None).seed == 0 and make_policy("random:5").seed == 5


def test_defaults_describe_a_backend_without_the_capability():
    class Bare(Policy):
        async def complete(self, requests, params):
            return [Completion(text="hi") for _ in requests]

    class Named(Bare):
        name = "named"

    class Child(Named):
        pass

    p = Bare()
    assert (Bare.name, Named.name, Child.name) == ("Bare", "named", "named")
    assert not p.continuous and p.pad_id is None and p.template_name is None and not p.supports_logprobs
    assert not p.takes_weights and p.fleet is None and dict(p.stats) == {} and p.unusable is None
    assert asyncio.run(p.preflight()) is None
    p.close()  # no event loop needed when there is nothing to close


def test_the_episode_budget_puts_its_cap_in_the_request():
    from officegym.train.runtime import EpisodeBudget

    seen: list[int | None] = []

    class Counter(Policy):
        async def complete(self, requests, params):
            seen.extend(r.max_new_tokens for r in requests)
            return [Completion(text="x", completion_tokens=3) for _ in requests]

    budget = EpisodeBudget(Counter(), 5)
    params = SamplingParams(max_new_tokens=8)
    (first,) = asyncio.run(budget.complete([PolicyRequest(messages=[], tools=[])], params))
    asyncio.run(budget.complete([PolicyRequest(messages=[], tools=[], previous=first)], params))
    assert seen == [5, 2] and budget.name == "Counter" and not budget.continuous


def test_no_attribute_probes_on_policies():
    src = Path(officegym.__file__).parent
    probe = re.compile(r"\b(?:getattr|hasattr)\(\s*(?:self\.policy|self\.inner|policy|pol|other|p)\s*,")
    found = [f"{path.relative_to(src)}:{n}" for path in src.rglob("*.py")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if probe.search(line)]
    assert found == []
