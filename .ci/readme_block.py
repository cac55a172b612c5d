"""Print the fenced block that follows a `<!-- ci: NAME ... -->` marker in README.md (or in the file
given second), so that CI runs the documents' own commands and the two can never drift apart.
A line ending in a backslash continues on the next, as in a shell."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def block(text: str, name: str, source: str = "README.md") -> list[str]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(f"<!-- ci: {name}"):
            start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            end = next(j for j in range(start + 1, len(lines)) if lines[j].startswith("```"))
            return _joined([x for x in lines[start + 1 : end] if x.strip()])
    raise SystemExit(f"{source} has no '<!-- ci: {name}' marker")


def _joined(lines: list[str]) -> list[str]:
    out: list[str] = []
    carry = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            carry += line.rstrip()[:-1].rstrip() + " "
            continue
        out.append(carry + line.strip() if carry else line)
        carry = ""
    return out + ([carry.rstrip()] if carry else [])


if __name__ == "__main__":
    source = sys.argv[2] if len(sys.argv) > 2 else "README.md"
    print("\n".join(block((ROOT / source).read_text(encoding="utf-8"), sys.argv[1], source)))
