"""A strict fingerprint of the tables a session ends with (the review queue compares rewarded end
states by it): every compared table's rows, base rows keyed by the base row they came from,
inserted rows as a multiset without their generated ids."""

from __future__ import annotations

import json
import math
from typing import Any

from officegym.envs.workplace.session import WorkplaceSession
from officegym.envs.workplace.world import COMPARED_TABLES, ID_COLUMNS, TABLE_COLUMNS


def _cell(value: Any) -> Any:
    """A cell as the strict state comparison sees it: numbers and their strings alike, nulls alike,
    letter case and spacing kept (the verifier's tolerances are what a reviewer should see)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def table_fingerprint(session: WorkplaceSession) -> str:
    """The fingerprint (JSON text) of the tables `session` holds now."""
    world = session.world
    parts = {}
    for name in COMPARED_TABLES:
        state = session.table(name)
        base_rows = world.tables.get(name, ())
        id_col = ID_COLUMNS[name]
        skip = TABLE_COLUMNS[name].index(id_col) if id_col else None
        changed, new, present = [], [], set()
        for row, origin in zip(state.rows, state.origins):
            if origin is None:
                new.append([_cell(c) for i, c in enumerate(row) if i != skip])
                continue
            present.add(origin)
            # Rows the episode never touched are the world's own tuples: skip them cheaply.
            if origin < len(base_rows) and row is base_rows[origin]:
                continue
            changed.append([origin, [_cell(c) for c in row]])
        deleted = [o for o in range(len(base_rows)) if o not in present]
        parts[name] = {"changed": changed, "deleted": deleted, "new": sorted(new, key=json.dumps)}
    return json.dumps(parts, sort_keys=True)
