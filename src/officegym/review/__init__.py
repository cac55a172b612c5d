"""Human review: flag rollouts worth a human's time, review them in a web UI, export the decisions
as RL pool edits, SFT data and verifier regression cases; one active-learning round per call.

The workplace's rollouts, the role environments' (graded verdicts: review/roles.py) and councils
(councils.jsonl, every seat's turns and acts: review/council.py) go through the same queue.

    from officegym.review import Store, flag_run, export_store, active_learning_round
"""

from officegym.review.cases import check_cases
from officegym.review.export import build_export, export_store
from officegym.review.flag import REASONS, FlagConfig, flag_rows, flag_run
from officegym.review.imports import import_reviews
from officegym.review.loop import RoundSummary, active_learning_round, summary_markdown, write_summary
from officegym.review.rows import read_run
from officegym.review.store import REJECT_REASONS, Store
from officegym.review.worlds import Environments

__all__ = [
    "REASONS",
    "REJECT_REASONS",
    "Environments",
    "FlagConfig",
    "RoundSummary",
    "Store",
    "active_learning_round",
    "build_export",
    "check_cases",
    "export_store",
    "flag_rows",
    "flag_run",
    "import_reviews",
    "read_run",
    "summary_markdown",
    "write_summary",
]
