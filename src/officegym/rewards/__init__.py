"""Reward functions over a task, a trajectory and the verifier's verdict.

A reward is `reward(task, trajectory, verdict) -> RewardResult(total, components)`, with a `name`
and a `max_total`. `VerifierScore` ("outcome") is the verifier's own score, graded where it grades;
`BinaryOutcome` ("binary") is 1/0 on `verdict.matched`; `ShapedReward` adds efficiency,
tool-use quality and a capped penalty for wasted steps, only for correct answers;
`CallMatch` gives partial credit for the reference calls reproduced; `WeightedSum` combines rewards; `make_reward` builds any of them from a config value and
`training_reward` adds the invalid-call penalty a trainer asks for. `calls` holds the one
definition of an invalid call.
"""

from officegym.rewards.base import RewardFunction, RewardResult, WriteTools, write_predicate
from officegym.rewards.call_match import CallMatch, argument_credit
from officegym.rewards.calls import count_calls, invalid_calls, is_invalid_status, trajectory_calls
from officegym.rewards.combine import WeightedSum
from officegym.rewards.outcome import BinaryOutcome, VerifierScore
from officegym.rewards.penalty import InvalidCallPenalty
from officegym.rewards.registry import (
    UnknownRewardError,
    make_reward,
    register_reward,
    reward_names,
    training_reward,
)
from officegym.rewards.shaped import (
    REASONS,
    ShapedConfig,
    ShapedReward,
    UnnecessaryStep,
    find_unnecessary_steps,
)

__all__ = [
    "REASONS",
    "BinaryOutcome",
    "CallMatch",
    "InvalidCallPenalty",
    "RewardFunction",
    "RewardResult",
    "ShapedConfig",
    "ShapedReward",
    "UnknownRewardError",
    "UnnecessaryStep",
    "VerifierScore",
    "WeightedSum",
    "WriteTools",
    "argument_credit",
    "count_calls",
    "find_unnecessary_steps",
    "invalid_calls",
    "is_invalid_status",
    "make_reward",
    "register_reward",
    "reward_names",
    "training_reward",
    "trajectory_calls",
    "write_predicate",
]
