"""Reward functions over a task, a trajectory and the verifier's verdict.

A reward is `reward(task, trajectory, verdict) -> RewardResult(total, components)`, with a `name`
and a `max_total`. `BinaryOutcome` is the verifier's 1/0; `ShapedReward` adds efficiency,
tool-use quality and a capped penalty for wasted steps, only for correct answers;
`CallMatch` gives partial credit for the reference calls reproduced; `WeightedSum` combines rewards; `make_reward` builds any of them from a config value.
"""

from officegym.rewards.base import RewardFunction, RewardResult, WriteTools, write_predicate
from officegym.rewards.call_match import CallMatch, argument_credit
from officegym.rewards.combine import WeightedSum
from officegym.rewards.outcome import BinaryOutcome
from officegym.rewards.registry import UnknownRewardError, make_reward, register_reward, reward_names
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
    "RewardFunction",
    "RewardResult",
    "ShapedConfig",
    "ShapedReward",
    "UnknownRewardError",
    "UnnecessaryStep",
    "WeightedSum",
    "WriteTools",
    "argument_credit",
    "find_unnecessary_steps",
    "make_reward",
    "register_reward",
    "reward_names",
    "write_predicate",
]
