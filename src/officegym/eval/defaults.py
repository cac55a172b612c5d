"""The evaluation settings every evaluation starts from: `officegym eval`'s defaults and the
pipeline's `eval` section are these, so a model scores the same from either."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EvalDefaults:
    max_steps: int = 6
    max_new_tokens: int = 256
    temperature: float = 0.0  # greedy: an evaluation measures the policy, not the sampler's luck
    max_tool_output_chars: int | None = 2000  # None: never cut a tool's output
    seed: int = 0


EVAL_DEFAULTS = EvalDefaults()


def settings_line(max_steps: int, temperature: float, max_new_tokens: int, max_tool_output_chars: int | None,
                  seed: int | None, k: int = 1) -> str:
    """The sampling and episode settings of an evaluation in one line, as it starts."""
    cap = "uncut" if max_tool_output_chars is None else f"cut at {max_tool_output_chars} characters"
    return (f"settings: temperature {temperature:g}, {max_new_tokens} new tokens per turn, {max_steps} steps, "
            f"tool outputs {cap}, seed {seed}, {k} sample{'s' if k != 1 else ''} per task")
