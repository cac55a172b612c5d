"""Task generation for the Workplace Assistant: its sandbox for validation, its candidate source
(the templates of `officegym.envs.workplace.tasks`), and its NeMo Gym rows."""

from __future__ import annotations

import hashlib
import random
from datetime import datetime
from pathlib import Path
from typing import Any

from officegym.core.types import ToolCall, ToolSpec
from officegym.envs.workplace.generate.default import world_id_of
from officegym.envs.workplace.session import WorkplaceSession
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.envs.workplace.state import outcome_row
from officegym.envs.workplace.tasks import TEMPLATES, NoTask, WorldView, surface
from officegym.envs.workplace.tools import WRITE_TOOLS
from officegym.envs.workplace.world import COMPARED_TABLES, World, load_world
from officegym.sdg.engine import TemplateError
from officegym.sdg.validate import Candidate

ENVIRONMENT_NAME = "workplace_assistant"
TOOL_PREFIX = {
    "email": "email_", "calendar": "calendar_", "analytics": "analytics_",
    "project_management": "project_management_", "customer_relationship_manager": "customer_relationship_manager_",
}
_SPECS = {s.name: s for s in TOOL_SPECS}


def system_prompt(now: str) -> str:
    """The reference's system prompt, for this world's clock."""
    t = datetime.strptime(now, "%Y-%m-%d %H:%M:%S")
    return (f"Today's date is {t.strftime('%A')}, {t.strftime('%Y-%m-%d')} and the current time is "
            f"{t.strftime('%H:%M:%S')}. Remember the current date and time when answering queries. "
            "Meetings must not start before 9am or end after 6pm.")


TOOL_MODES = ("all", "domain", "mixed")
WORDINGS = ("base", "composed")


def offered_tools(domains: tuple[str, ...], mode: str) -> list[dict[str, Any]]:
    """All 27 tool schemas (`all`), or the directory plus the task's domains (`domain`), in the
    reference's order."""
    if mode not in ("all", "domain"):
        raise ValueError(f"tools must be 'all' or 'domain', got {mode!r}")
    keep = [s for s in TOOL_SPECS if mode == "all" or s.name.startswith("company_directory")
            or any(s.name.startswith(TOOL_PREFIX[d]) for d in domains)]
    return [s.to_schema() for s in keep]


class WorkplaceSandbox:
    """Validation's view of the environment: fresh sessions, errors, state fingerprints."""

    def __init__(self, world: World):
        self.world = world
        self._base = {t: tuple(outcome_row(t, r) for r in world.tables[t]) for t in COMPARED_TABLES}

    def specs(self) -> dict[str, ToolSpec]:
        return _SPECS

    def new(self) -> WorkplaceSession:
        return WorkplaceSession(self.world)

    def run(self, state: WorkplaceSession, call: ToolCall) -> tuple[str, str | None]:
        result = state.execute(call.name, call.arguments)
        return result.text, None if result.status == "ok" else str(result.value)

    def fingerprint(self, state: WorkplaceSession):
        """The compared tables exactly as stored (cheap: tuples compare in C)."""
        return tuple(tuple(state.table(t).rows) if state.table(t).owned else None for t in COMPARED_TABLES)

    def changed(self, state: WorkplaceSession) -> bool:
        """Whether the outcome verifier would see a different state than the world's (a write that
        only changes letter case, for example, does not count)."""
        for t in COMPARED_TABLES:
            table = state.table(t)
            if (table.owned and tuple(table.rows) != self.world.tables[t]
                    and tuple(outcome_row(t, r) for r in table.rows) != self._base[t]):
                return True
        return False

    def is_write(self, name: str) -> bool:
        return name in WRITE_TOOLS

    def probe(self):
        def run(name: str, arguments: dict[str, Any]):
            return WorkplaceSession(self.world).execute(name, arguments).value
        return run


class WorkplaceSource:
    """Candidates from every registered template over one world."""

    def __init__(self, world: World | str | Path, world_id: str | None = None, templates: list[str] | None = None,
                 wordings: str = "base", do_nothing_weight: int = 4):
        """`wordings`: "base" fills a template's phrasings as written; "composed" adds surface
        features (frames, verb synonyms, quotes, name case, typos: tasks/surface.py).
        `do_nothing_weight`: draws per round of a template that can ask to change nothing."""
        if wordings not in WORDINGS:
            raise ValueError(f"wordings must be one of {', '.join(WORDINGS)}, got {wordings!r}")
        self.wordings = wordings
        self.do_nothing_weight = do_nothing_weight
        if not isinstance(world, World):
            path = world
            world = load_world(path)
            world_id = world_id or world_id_of(path)
        self.world = world
        self.world_id = world_id or "world"
        self.view = WorldView(world, self.world_id)
        self.sandbox = WorkplaceSandbox(world)
        unknown = sorted(set(templates or ()) - set(TEMPLATES))
        if unknown:
            raise ValueError(f"unknown template(s): {', '.join(unknown)}")
        self._templates = list(templates) if templates else list(TEMPLATES)

    def template_ids(self) -> list[str]:
        return list(self._templates)

    def can_do_nothing(self, template_id: str) -> bool:
        return TEMPLATES[template_id].can_do_nothing

    def weight(self, template_id: str) -> int:
        return self.do_nothing_weight if TEMPLATES[template_id].can_do_nothing else 1

    def propose(self, template_id: str, rng: random.Random) -> Candidate | None:
        tpl = TEMPLATES[template_id]
        try:
            plan = tpl.build(self.view, rng)
        except NoTask:
            return None
        except Exception as exc:
            raise TemplateError(f"{template_id} raised {exc!r}") from exc
        if plan is None:
            return None
        index = plan.phrasing if plan.phrasing is not None else rng.randrange(len(tpl.phrasings))
        meta: dict[str, Any] = {}
        try:
            if self.wordings == "composed":
                wording = surface.draw(tpl.phrasings[index], index, rng)
                query = surface.render(tpl.phrasings[index], plan.slots, wording, rng)
                meta["wording"] = wording
            else:
                query = tpl.phrasings[index].format(**plan.slots)
                query = query[:1].upper() + query[1:]
        except (KeyError, IndexError, ValueError) as exc:
            raise TemplateError(f"{template_id}: phrasing {index} cannot be filled: {exc!r}") from exc
        return Candidate(
            template=template_id, category=tpl.category, domains=tpl.domains, query=query, calls=list(plan.calls),
            world_id=self.world_id, phrasing=index, conditions=plan.conditions, date_steps=plan.date_steps,
            trigger=plan.trigger, trigger_expected=plan.trigger_expected, tempting=list(plan.tempting),
            slots=dict(plan.slots), meta=meta, reply=plan.reply,
        )


def task_id(c: Candidate) -> str:
    """Stable id from the world, the template and the query."""
    digest = hashlib.blake2b(f"{c.world_id}\n{c.template}\n{c.query}".encode(), digest_size=6).hexdigest()
    return f"{c.world_id}-{c.template}-{digest}"


def task_row(c: Candidate, *, now: str, tools: str, difficulty: int, reads: int, writes: int, split: str,
             subset: str = "trained") -> dict[str, Any]:
    """A NeMo Gym JSONL row (the official dataset's keys) plus our metadata. `tools` is "all" or
    "domain" here (a "mixed" dataset decides per task); `subset` says what the test split measures:
    "trained" (a new fill of a trained template and wording), "heldout_template" or "heldout_wording"."""
    wording = c.meta.get("wording")
    row = {
        "id": task_id(c),
        "responses_create_params": {
            "input": [{"role": "system", "content": system_prompt(now)}, {"role": "user", "content": c.query}],
            "tools": offered_tools(c.domains, tools),
            "parallel_tool_calls": False,
            "temperature": 1.0,
        },
        "ground_truth": [call.to_nemo() for call in c.calls],
        "category": f"{ENVIRONMENT_NAME}_{c.category}",
        "environment_name": ENVIRONMENT_NAME,
        "template": c.template,
        "difficulty": difficulty,
        "domains": list(c.domains),
        "world_id": c.world_id,
        "split": split,
        "phrasing": c.phrasing,
        "calls": {"reads": reads, "writes": writes},
        "conditions": c.conditions,
        "date_steps": c.date_steps,
        "do_nothing": writes == 0,
        "tools_offered": tools,
        "subset": subset,
    }
    if c.reply is not None:
        row["reply"] = c.reply
    if wording is not None:
        row["wording"] = wording.key()
        row["wording_features"] = list(wording.features())
    return row
