"""`officegym pipeline`: world -> tasks -> baselines -> eval -> SFT -> eval -> GRPO -> eval -> review ->
report in one resumable run folder, for the workplace or any environment that generates its own
tasks (`env: roles/cost`, configs/roles_*.yaml).

config.py holds the config and the stages' order, run.py the `Pipeline` that runs them (their order,
resume, records), context.py the `RunContext` the stages are functions over (a Pipeline is one),
world_tasks.py, evaluation.py and training.py the stages' bodies, review.py the optional
active-learning rounds and report.py the run's report. Imports point one way: run -> the stages ->
context -> config, run -> review -> config and run -> report (which imports neither).
"""

from __future__ import annotations

from officegym.pipeline.config import (
    STAGES,
    EvalSection,
    PipelineConfig,
    PipelineError,
    ReviewSection,
    TasksSection,
    WorldSection,
    load_pipeline_config,
)
from officegym.pipeline.report import headline, write_pipeline_report
from officegym.pipeline.review import build_pool, run_review_rounds
from officegym.pipeline.run import Pipeline

__all__ = [
    "STAGES",
    "EvalSection",
    "Pipeline",
    "PipelineConfig",
    "PipelineError",
    "ReviewSection",
    "TasksSection",
    "WorldSection",
    "build_pool",
    "headline",
    "load_pipeline_config",
    "run_review_rounds",
    "write_pipeline_report",
]
