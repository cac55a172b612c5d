"""benchmarks/turn_accuracy.py: each assistant turn of the replayed ground truth, judged against the model's."""

from __future__ import annotations

from officegym.pipeline import Pipeline, PipelineConfig
from officegym.train.config_files import build_config


def _pipeline(tmp_path):
    cfg = build_config(PipelineConfig, {
        "out_dir": str(tmp_path / "run"), "model": "oracle", "stages": ["world", "tasks"],
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 60, "seed": 0, "wordings": "base",
                  "templates": ["email.send_to_person", "calendar.create_with_person"]},
        "eval": {"max_tasks": 6, "max_steps": 4}}, [])
    pipeline = Pipeline(cfg)
    pipeline.run()
    return pipeline


def test_the_replay_is_right_at_every_turn_and_noop_never_calls(tmp_path, benchmark_script):
    mod = benchmark_script("turn_accuracy")
    from officegym.agent.policies import make_policy
    from officegym.train.sft_data import GroundTruthPolicy

    pipeline = _pipeline(tmp_path)
    env, tasks = pipeline.environment(), pipeline.eval_tasks("eval_sft")
    calls = sum(len(t.ground_truth) for t in tasks)
    oracle = mod.turn_accuracy(env, tasks, GroundTruthPolicy("one"))
    assert len(oracle.task_ok) == len(tasks) and all(oracle.task_ok.values())
    assert sum(oracle.by_kind["read"].values()) + sum(oracle.by_kind["write"].values()) == calls
    assert oracle.by_kind["answer"] == {"right": len(tasks)} and not oracle.first_wrong

    noop = mod.turn_accuracy(env, tasks, make_policy("noop"))
    assert not any(noop.task_ok.values())
    assert set(noop.by_kind["read"]) | set(noop.by_kind["write"]) == {"answered instead of calling"}
    assert noop.by_kind["answer"]["right"] == len(tasks)
    assert sum(noop.first_wrong.values()) == len(tasks)  # one first mistake a task

    # the oracle makes every call in its first turn: right there, then it answers where a call is due
    batched = mod.turn_accuracy(env, tasks, make_policy("oracle"))
    assert batched.first_wrong == {"write: answered instead of calling": len(tasks)}


def test_judge_tells_tool_and_argument_mistakes_apart(benchmark_script):
    mod = benchmark_script("turn_accuracy")
    from officegym.core.policy import Completion
    from officegym.core.task import ToolCall

    want = [ToolCall(name="email_send_email", arguments={"recipient": "a@x.com", "subject": "s", "body": "b"})]
    same = Completion(tool_calls=[ToolCall(name="email_send_email", arguments={"recipient": "a@x.com", "subject": "s", "body": "b"})])
    other_args = Completion(tool_calls=[ToolCall(name="email_send_email", arguments={"recipient": "b@x.com", "subject": "s", "body": "b"})])
    other_tool = Completion(tool_calls=[ToolCall(name="email_search_emails", arguments={"query": "a"})])
    assert mod.judge(want, same) == "right"
    assert mod.judge(want, other_args) == "right tool, other arguments"
    assert mod.judge(want, other_tool) == "other tool"
    assert mod.judge(want, Completion(text="Done.")) == "answered instead of calling"
    assert mod.judge(want, Completion(invalid=["not JSON"])) == "invalid call"
    assert mod.judge([], Completion(text="Done.")) == "right"
    assert mod.judge([], same) == "called instead of answering"
