"""GRPO on an environment with verifiable rewards, readable top to bottom.

One step:
  1. sample `num_prompts_per_step` tasks (a resumable seeded stream) and roll each out
     `num_generations_per_prompt` times through the agent loop with the policy being trained;
     with dynamic sampling, groups whose rewards do not vary are dropped ("skip") or replaced by
     groups of further tasks ("refill", up to `max_refill_batches` extra batches);
  2. rewards come from the environment's verifier (its own score, or any officegym reward), minus
     `invalid_call_penalty` for rollouts with an invalid call (rewards/calls.py), computed once by
     the reward function and logged as trained; advantages are group-relative
     (leave-one-out or mean baseline, group/batch/no std scaling, optional clip), and
     `invalid_call_advantage` overrides the advantage of such rollouts;
  3. each rollout becomes one training row from its token ledger (the exact sampled ids; only they
     carry loss mask 1); mu inner epochs each take one optimiser step over all rows, in
     micro-batches whose losses are normalised by the token (or sequence) count of the whole batch
     so that they add up to the full batch's loss. With mu = 1 the old log-probs are the current
     ones, detached (ratio 1, no extra forward); with mu > 1 they are computed once before the first
     update. A KL penalty (beta > 0) uses the adapter-disabled model (LoRA) or a frozen copy as the
     reference; the importance weight against the sampler's log-probs is applied when a separate
     engine (vLLM) sampled or `loss.is_cap` is set;
  4. log metrics, write the step's rollouts, validate every N steps, checkpoint every M steps.

A rollout that breaks (template mismatch, backend error, nothing sampled) is counted and left out of
the update; its reward still counts for its group's baseline.

The run loop is train/grpo_run.py, one step train/grpo_step.py (its state a `StepContext`), the
update train/grpo_update.py; this module is the entry point callers import.
"""

from __future__ import annotations

from officegym.train.grpo_run import sft_mix_tasks, train_grpo
from officegym.train.grpo_step import Group, StepContext, grpo_step
from officegym.train.grpo_update import merge_duplicate_rows
from officegym.train.run_result import TrainingSetupError, TrainResult

__all__ = ["Group", "StepContext", "TrainResult", "TrainingSetupError", "grpo_step", "merge_duplicate_rows", "sft_mix_tasks",
           "train_grpo"]
