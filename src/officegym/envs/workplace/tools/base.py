"""What every toolkit shares: the session it works on and pagination."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from officegym.envs.workplace.session import WorkplaceSession


class Toolkit:
    __slots__ = ("s",)

    def __init__(self, session: WorkplaceSession):
        self.s = session


def records(columns: tuple[str, ...], rows: list[tuple]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row)) for row in rows]


def paginate(items: list[Any], page: Any, page_size: Any, key: str, total_key: str) -> dict[str, Any]:
    """The reference's pagination: ceil pages, page clamped into [1, pages], the same arithmetic
    (so a zero or non-integer page size fails the same way)."""
    total = len(items)
    total_pages = (total + page_size - 1) // page_size
    page = max(1, min(page, total_pages)) if total_pages > 0 else 1
    start = (page - 1) * page_size
    end = min(start + page_size, total)
    return {
        key: items[start:end] if total else [],  # the reference slices only when it has results
        "pagination": {total_key: total, "page": page, "page_size": page_size, "total_pages": total_pages},
    }


def select(rows: list[tuple], mask: list[bool]) -> list[tuple]:
    """`frame[mask]`: the rows where mask is True."""
    return [r for r, keep in zip(rows, mask) if keep]
