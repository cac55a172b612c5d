"""The SFT loss mixed into GRPO (the "ptx" term of InstructGPT's PPO): each step also trains on a
few ground-truth conversations of the training tasks, `grpo.sft_mix.coef` times their mean
per-token negative log-likelihood added to the policy loss.

Why: GRPO's gradient only comes from groups whose rewards vary. Templates the policy always or
never solves send none, so nothing holds what SFT taught there while the other templates' updates
move the shared weights; in the quickstart the e-mail gain came with CRM and project tasks lost to
miscopied arguments (docs/benchmarks.md). The conversations are the SFT stage's replays of the
tasks' ground truth (verified), drawn per step from (seed, step) alone, so a resumed run trains on
what the uninterrupted one would have."""

from __future__ import annotations

import random
from typing import Any

from officegym.train.config import GRPORunConfig
from officegym.train.data import DataError
from officegym.train.distributed import Dist
from officegym.train.sft_data import BuildReport, Example, ground_truth_examples


def prompt_clusters(examples: list[Example]) -> list[list[int]]:
    """For each example, the indexes of the examples sharing its prompt: those a shared-prefix
    micro-batch would take together, without its row and token caps (train/forward.py)."""
    from officegym.train.forward import prefix_micro_batches

    out: list[list[int]] = [[] for _ in examples]
    for group in prefix_micro_batches([e.input_ids for e in examples], max_rows=len(examples)):
        for i in group:
            out[i] = group
    return out


class SFTMix:
    def __init__(self, examples: list[Example], pad_id: int, cfg: GRPORunConfig, report: BuildReport):
        if not examples:
            raise DataError(f"grpo.sft_mix: no ground-truth conversation of the training tasks to train on "
                            f"(dropped: {report.dropped or 'none'})")
        self.examples = examples
        self.pad_id = pad_id
        self.cfg = cfg
        self.report = report
        self._clusters: list[list[int]] | None = None  # per example: the examples sharing its prompt

    @classmethod
    def build(cls, tm: Any, cfg: GRPORunConfig, env: Any, tasks: list[Any]) -> SFTMix:
        from officegym.train.modeling import token_renderer

        m = cfg.grpo.sft_mix
        renderer = token_renderer(tm, cfg)
        report = BuildReport()
        examples = ground_truth_examples(renderer, env, tasks, m.calls_per_turn, m.final_answer,
                                         cfg.rollout.max_tool_output_chars, m.max_length, report)
        return cls(examples, int(renderer.pad_id), cfg, report)

    def indexes(self, step: int) -> list[int]:
        """The conversations of `step`: a function of the seed and the step only."""
        m = self.cfg.grpo.sft_mix
        k = min(m.examples, len(self.examples))
        rng = random.Random(f"sft-mix:{self.cfg.seed}:{step}")
        if m.draw != "shared_prompt":
            return rng.sample(range(len(self.examples)), k)
        # One conversation drawn uniformly picks the prompt, so each conversation is in a step with
        # probability k/N as under `any` (when its prompt has at least k); a prompt with fewer than
        # k conversations is topped up from the rest.
        if self._clusters is None:
            self._clusters = prompt_clusters(self.examples)
        cluster = self._clusters[rng.randrange(len(self.examples))]
        picked = rng.sample(cluster, min(k, len(cluster)))
        chosen = set(picked)
        rest = [i for i in range(len(self.examples)) if i not in chosen]
        return picked + rng.sample(rest, k - len(picked))

    def batches(self, step: int, device: Any, dist: Dist) -> list[dict[str, Any]]:
        """This rank's share of the step's conversations as micro-batches (those of one tool set
        together, so each runs its prompt once)."""
        from officegym.train.sft import conversation_batches

        g = self.cfg.grpo
        mine = [self.examples[i] for i in dist.share(self.indexes(step))]
        return conversation_batches(mine, g.micro_batch_size, self.pad_id, device, by_prefix=True,
                        max_tokens=g.micro_batch_tokens) if mine else []
