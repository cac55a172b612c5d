"""eval/evaluate.py: the one evaluation flow that `officegym eval` and the pipeline both run."""

from __future__ import annotations

from officegym.agent.policies import make_policy
from officegym.core.registry import make
from officegym.eval.defaults import EVAL_DEFAULTS, settings_line
from officegym.eval.evaluate import EvalSettings, evaluate


def test_settings_default_to_the_evaluation_defaults():
    config = EvalSettings().loop_config()
    assert (config.max_steps, config.max_tool_output_chars, config.mode) == \
        (EVAL_DEFAULTS.max_steps, EVAL_DEFAULTS.max_tool_output_chars, None)
    assert (config.params.temperature, config.params.max_new_tokens, config.params.seed) == \
        (EVAL_DEFAULTS.temperature, EVAL_DEFAULTS.max_new_tokens, EVAL_DEFAULTS.seed)
    assert EvalSettings(k=3).line() == settings_line(EVAL_DEFAULTS.max_steps, EVAL_DEFAULTS.temperature,
                                                     EVAL_DEFAULTS.max_new_tokens, EVAL_DEFAULTS.max_tool_output_chars,
                                                     EVAL_DEFAULTS.seed, 3)


def test_evaluate_runs_the_setup_first_and_resumes(tmp_path):
    env = make("roles/cto")
    tasks = env.generate_tasks(3, 0)
    order = []

    def start(refresh):
        order.append("start")
        refresh()

    first = evaluate(env, tasks, make_policy("oracle"), tmp_path, EvalSettings(k=2), console=None, label="t",
                     start=start)
    assert order == ["start"] and (first.new, first.skipped) == (6, 0) and not first.failed and not first.broken
    again = evaluate(env, tasks, make_policy("oracle"), tmp_path, EvalSettings(k=2), console=None, label="t")
    assert (again.new, again.skipped) == (0, 6) and again.rows == first.rows
