"""Which pandas the reference is reproduced on (`reference_compat`).

NeMo Gym's reference keeps its tables as pandas DataFrames, so some of what it answers depends on
the pandas it runs on. NeMo Gym's uv.lock pins pandas 2.3.2, where `read_csv(dtype=str)` gives
object columns; `pip install nemo-gym==0.7.0` resolves pandas 3.1 (with pyarrow, which nemo-gym
requires), where the same columns get pandas 3's `str` dtype. That changes, for a model's calls:

- a write of a number, a boolean or a dict into a string column is refused (`calendar_update_event`
  with `"duration": 30` answers "Invalid value '30' for dtype 'str'. ..." and writes nothing);
- comparing a string column with a number or a dict, and `x in column.values` with a list, raise
  pandas 3's errors ("Invalid comparison between dtype=str and int", "eq not implemented for
  <class 'dict'>", ...);
- a search pattern goes to pyarrow's RE2 unless it needs Python's `re` (str_dtype.py says when), so
  a bad pattern reads "Invalid regular expression: missing ): (", and a search over no rows never
  compiles its pattern; a missing cell is no match instead of an error.

A column keeps the `str` dtype until a created row brings a cell that is not a string (pandas'
concat then makes it object, with pandas 2's behaviour). `pandas2` (the default) is what
officegym has always reproduced; `pandas3` reproduces pandas 3.1.1.
"""

from __future__ import annotations

PANDAS2 = "pandas2"
PANDAS3 = "pandas3"
REFERENCE_COMPATS = (PANDAS2, PANDAS3)
DEFAULT_REFERENCE_COMPAT = PANDAS2


def check_reference_compat(name: str) -> str:
    """`name` if it is a known setting and can be reproduced here; ValueError saying why not."""
    if name not in REFERENCE_COMPATS:
        raise ValueError(f"unknown reference_compat {name!r}; choose from {', '.join(REFERENCE_COMPATS)}")
    if name == PANDAS3:
        try:
            import pyarrow.compute  # noqa: F401  (pandas 3 matches search patterns with pyarrow's RE2)
        except ImportError:
            raise ValueError("reference_compat 'pandas3' matches search patterns with pyarrow's RE2, as pandas 3 "
                             "does: pip install pyarrow") from None
    return name
