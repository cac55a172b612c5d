"""The company directory (SPEC 1.1): read-only, never compared."""

from __future__ import annotations

from officegym.envs.workplace.frame_ops import contains_mask
from officegym.envs.workplace.results import Rejected
from officegym.envs.workplace.tools.base import Toolkit


class CompanyDirectoryTool(Toolkit):
    __slots__ = ()

    def find_email_address(self, name=""):
        if name == "":
            return Rejected("Name not provided.")
        name = name.lower()
        addresses = self.s.world.directory
        return [a for a, hit in zip(addresses, contains_mask(list(addresses), name, str_dtype=self.s.pandas3)) if hit]
