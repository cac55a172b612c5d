"""Copy-on-write table state of one session, with the reference's row labels.

Rows are tuples. A fresh session's table points at the world's immutable tuple of rows; the first
write copies the list (not the rows). Row labels follow pandas exactly as the reference produces
them (SPEC 1.7): deletes leave gaps, inserts either relabel everything 0..n-1, append label 0
(calendar), or append label n (plots). `origins` remembers which base row each row came from
(None for inserted rows), which the outcome verifier keys on.
"""

from __future__ import annotations

RELABEL_ALL = "relabel"  # concat(..., ignore_index=True)
LABEL_ZERO = "zero"  # concat without ignore_index: the new one-row frame brings label 0
LABEL_NEXT = "next"  # df.loc[len(df)] = row


class TableState:
    __slots__ = ("_labels", "_origins", "columns", "insert_rule", "owned", "rows")

    def __init__(self, columns: tuple[str, ...], rows: tuple[tuple, ...], insert_rule: str):
        self.columns = columns
        self.rows: tuple[tuple, ...] | list[tuple] = rows
        self.insert_rule = insert_rule
        self.owned = False
        self._labels: list[int] | None = None  # None: contiguous 0..n-1
        self._origins: list[int | None] | None = None  # None: row i is base row i

    @property
    def labels(self) -> list[int]:
        return list(range(len(self.rows))) if self._labels is None else list(self._labels)

    @property
    def origins(self) -> list[int | None]:
        return list(range(len(self.rows))) if self._origins is None else list(self._origins)

    def _own(self) -> list[tuple]:
        if not self.owned:
            self.rows = list(self.rows)
            self.owned = True
        return self.rows  # type: ignore[return-value]

    def append(self, row: tuple) -> None:
        rows = self._own()
        n = len(rows)
        if self._origins is None:
            self._origins = list(range(n))
        self._origins.append(None)
        if self.insert_rule == RELABEL_ALL:
            self._labels = None
        elif self.insert_rule == LABEL_ZERO:
            if self._labels is None:
                self._labels = list(range(n))
            self._labels.append(0)
        elif self._labels is not None:  # LABEL_NEXT keeps contiguity when there were no gaps
            self._labels.append(n)
        rows.append(row)

    def keep(self, mask: list[bool]) -> None:
        """Keep the rows where mask is True (a delete); labels and origins keep their gaps."""
        rows = self._own()
        n = len(rows)
        labels = self._labels if self._labels is not None else range(n)
        origins = self._origins if self._origins is not None else range(n)
        self.rows = [r for r, k in zip(rows, mask) if k]
        self._labels = [lab for lab, k in zip(labels, mask) if k]
        self._origins = [o for o, k in zip(origins, mask) if k]

    def set_cell(self, index: int, column: int, value: object) -> None:
        rows = self._own()
        row = list(rows[index])
        row[column] = value
        rows[index] = tuple(row)
