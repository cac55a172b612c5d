"""Task folders as Hugging Face `datasets`: a DatasetDict (train / validation / test) saved with
`save_to_disk`, the folder's dataset card beside it, and `push_to_hub` when asked.

Each record keeps the NeMo Gym row whole, as JSON text (`row`: `json.loads` gives the JSONL line's
object back, key for key), and also has typed columns for training code: `id`, `prompt` (the
messages, as TRL's conversational datasets hold them), `tools` (the tool schemas as JSON text: their
parameters differ from tool to tool, which an Arrow struct cannot hold without inventing keys),
`ground_truth` (name and JSON arguments per call), and every metadata key that is a scalar or a list
of strings of one type in every row (template, difficulty, world_id, subset, role, ...).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from officegym.core.files import replace_dir
from officegym.core.task import iter_jsonl

SPLITS = ("train", "validation", "test")
_OWN = ("id", "responses_create_params", "ground_truth")


class HFExportError(ValueError):
    """A task folder that cannot become a DatasetDict (the message says why)."""


def _kind(value: Any) -> str | None:
    """The column type a metadata value can have, or None for one that stays in `row` only."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "list[str]"
    return None


def _shared_columns(rows: list[dict[str, Any]]) -> list[str]:
    """Metadata keys every row has, with one column type in all of them."""
    if not rows:
        return []
    kinds: dict[str, set[str | None]] = {}
    for row in rows:
        for key, value in row.items():
            kinds.setdefault(key, set()).add(_kind(value))
    return sorted(k for k, ks in kinds.items() if k not in _OWN and k not in ("prompt", "tools", "row")
                  and len(ks) == 1 and None not in ks and all(k in row for row in rows))


def _prompt(row: dict[str, Any]) -> list[dict[str, str]]:
    raw = (row.get("responses_create_params") or {}).get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return [{"role": str(m.get("role", "")), "content": m["content"] if isinstance(m.get("content"), str)
             else json.dumps(m.get("content"))} for m in raw or [] if isinstance(m, dict)]


def _ground_truth(row: dict[str, Any]) -> list[dict[str, str]]:
    calls = row.get("ground_truth")
    if not isinstance(calls, list):
        return []
    return [{"name": str(c.get("name", "")), "arguments": c["arguments"] if isinstance(c.get("arguments"), str)
             else json.dumps(c.get("arguments", {}))} for c in calls if isinstance(c, dict)]


def records(rows: list[dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    """The records of a split's rows: the typed columns and the whole row as JSON text."""
    return [{"id": str(row.get("id")), "prompt": _prompt(row),
             "tools": json.dumps((row.get("responses_create_params") or {}).get("tools") or []),
             "ground_truth": _ground_truth(row), **{c: row[c] for c in columns},
             "row": json.dumps(row, ensure_ascii=False)} for row in rows]


def _features(columns: dict[str, str]):
    from datasets import Features, List, Value

    kinds = {"bool": Value("bool"), "int": Value("int64"), "float": Value("float64"), "str": Value("string"),
             "list[str]": List(Value("string"))}
    message = {"role": Value("string"), "content": Value("string")}
    return Features({"id": Value("string"), "prompt": List(message), "tools": Value("string"),
                     "ground_truth": List({"name": Value("string"), "arguments": Value("string")}),
                     **{c: kinds[k] for c, k in columns.items()}, "row": Value("string")})


def build_dataset_dict(task_dir: str | os.PathLike[str]):
    """The DatasetDict of a task folder's train/validation/test JSONL files (splits that are missing
    or empty are left out)."""
    try:
        from datasets import Dataset, DatasetDict
    except ImportError:
        raise HFExportError("writing a Hugging Face dataset needs the `datasets` package: "
                            "pip install 'officegym[hf]'") from None
    task_dir = Path(task_dir)
    split_rows = {s: [row for _, row in iter_jsonl(task_dir / f"{s}.jsonl")] for s in SPLITS
                  if (task_dir / f"{s}.jsonl").is_file()}
    split_rows = {s: rows for s, rows in split_rows.items() if rows}
    if not split_rows:
        raise HFExportError(f"{task_dir} holds no tasks (train/validation/test.jsonl)")
    every = [row for rows in split_rows.values() for row in rows]
    names = _shared_columns(every)
    columns = {c: _kind(every[0][c]) or "str" for c in names}
    features = _features(columns)
    return DatasetDict({s: Dataset.from_list(records(rows, names), features=features) for s, rows in split_rows.items()})


def write_hf_dataset(task_dir: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """`save_to_disk` of the task folder's DatasetDict into `out`, with the folder's card as
    out/README.md. Written into a temporary folder first and moved into place: `out` holds either
    the previous dataset or the new one, never half of one. `out` must be empty or an earlier export."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "dataset_dict.json").is_file())):
        raise HFExportError(f"{out} exists and is not an officegym Hugging Face export: give an empty or new folder")
    dd = build_dataset_dict(task_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        dd.save_to_disk(str(tmp))
        card = Path(task_dir) / "README.md"
        if card.is_file():
            shutil.copyfile(card, tmp / "README.md")
        replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def push_to_hub(task_dir: str | os.PathLike[str], repo_id: str, private: bool = True) -> None:
    """Upload the DatasetDict and its card to the Hugging Face Hub (needs network and a token:
    `huggingface-cli login` or HF_TOKEN)."""
    from datasets import DatasetCard

    dd = build_dataset_dict(task_dir)
    dd.push_to_hub(repo_id, private=private)
    card = Path(task_dir) / "README.md"
    if card.is_file():
        DatasetCard(card.read_text(encoding="utf-8")).push_to_hub(repo_id, repo_type="dataset")
