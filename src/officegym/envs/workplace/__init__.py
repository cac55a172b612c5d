"""The Workplace Assistant environment: NeMo Gym's 27 office tools over a world of tables."""

from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.session import WorkplaceSession
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.envs.workplace.verify import MODES, verify_calls
from officegym.envs.workplace.world import World, WorldFormatError, load_world

__all__ = [
    "MODES",
    "TOOL_SPECS",
    "WorkplaceEnvironment",
    "WorkplaceSession",
    "World",
    "WorldFormatError",
    "load_world",
    "verify_calls",
]
