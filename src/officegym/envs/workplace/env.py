"""WorkplaceEnvironment: the environment contract (core/environment.py) over a loaded world."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from officegym.core.environment import Announce, BaseEnvironment
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolSpec, Verdict
from officegym.envs.workplace.compat import DEFAULT_REFERENCE_COMPAT, check_reference_compat
from officegym.envs.workplace.session import WorkplaceSession
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.envs.workplace.tools import WRITE_TOOLS
from officegym.envs.workplace.verify import DEFAULT_MODE, MODES, verify_calls
from officegym.envs.workplace.world import World, load_world

NAME = "workplace_assistant"


class WorkplaceEnvironment(BaseEnvironment):
    """The Workplace Assistant: 27 tools over a world loaded once and shared by all sessions."""

    name = NAME
    modes = MODES
    takes_world = True
    sdg_templates = True
    verifies_truth_only = True
    nemo_gym_server = "WorkbenchResourcesServer"
    write_tools = WRITE_TOOLS

    def __init__(self, world: World | str | os.PathLike[str] | None = None, mode: str = DEFAULT_MODE,
                 reference_compat: str = DEFAULT_REFERENCE_COMPAT):
        """`reference_compat`: which pandas NeMo Gym's reference is reproduced on, where its answers
        depend on it (compat.py): "pandas2" (2.3.2, its uv.lock's) or "pandas3" (3.1)."""
        if world is None:
            raise ValueError("the workplace environment needs a world: pass a csv_data folder (--world DIR)")
        self.reference_compat = check_reference_compat(reference_compat)
        self.world = world if isinstance(world, World) else load_world(Path(world))
        self.mode = mode
        self._specs: dict[int, tuple[list, list[ToolSpec]]] = {}  # id(task.tools) -> (that list, its specs)

    @property
    def world_path(self) -> str | None:
        return self.world.path

    @classmethod
    def default_world(cls, announce: Announce | None = None) -> Path:
        from officegym.envs.workplace.generate.default import default_world

        return default_world(announce)

    @classmethod
    def reference_folders(cls) -> list[Path]:
        """NeMo Gym's resources_servers/workplace_assistant: where OFFICEGYM_REFERENCE points, and
        in the NeMo Gym reference cache (reference.py)."""
        from officegym.envs.workplace.reference import PACKAGE_PREFIX, reference_root

        given = os.environ.get("OFFICEGYM_REFERENCE")
        return [*([Path(given).expanduser()] if given else []), reference_root() / PACKAGE_PREFIX]

    @classmethod
    def load_world(cls, path: str | os.PathLike[str]) -> World:
        return load_world(path)

    @classmethod
    def generate_world(cls, folder: Path | None = None, **options: Any) -> Path | World:
        """A generated world (generate.generate_world's seed, size, now, company, user)."""
        from officegym.envs.workplace.generate import generate_world, write_world

        made = generate_world(**options)
        if folder is not None:
            return write_world(made, folder, overwrite=True)
        return made.to_world(f"<generated seed {options.get('seed')}>")

    @property
    def world_id(self) -> str | None:
        from officegym.envs.workplace.generate.default import world_id_of

        return world_id_of(self.world_path) if self.world_path else None

    @classmethod
    def world_named(cls, world_id: str, announce: Announce | None = None) -> Path | None:
        from officegym.envs.workplace.generate.default import generated_world, parse_generated_id

        made = parse_generated_id(world_id)
        return None if made is None else generated_world(*made, announce=announce)

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        if task is not None and task.tools:
            cached = self._specs.get(id(task.tools))
            if cached is None or cached[0] is not task.tools:
                if len(self._specs) > 4096:
                    self._specs.clear()
                cached = (task.tools, [ToolSpec.from_schema(t) for t in task.tools])
                self._specs[id(task.tools)] = cached
            return list(cached[1])
        return list(TOOL_SPECS)

    def session(self, task: Task | None = None) -> WorkplaceSession:
        return WorkplaceSession(self.world, self.reference_compat)

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        return verify_calls(self.world, calls, task.ground_truth, mode or self.mode, self.reference_compat)

    def state_fingerprint(self, session: WorkplaceSession) -> str:
        from officegym.envs.workplace.fingerprint import table_fingerprint

        return table_fingerprint(session)
