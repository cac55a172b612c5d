"""Print the fenced block that follows the `<!-- ci: NAME ... -->` marker in README.md, so that CI runs
the README's own commands and the two can never drift apart."""

from __future__ import annotations

import sys
from pathlib import Path


def block(text: str, name: str) -> list[str]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(f"<!-- ci: {name}"):
            start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            end = next(j for j in range(start + 1, len(lines)) if lines[j].startswith("```"))
            return [x for x in lines[start + 1 : end] if x.strip()]
    raise SystemExit(f"README.md has no '<!-- ci: {name}' marker")


if __name__ == "__main__":
    readme = Path(__file__).resolve().parents[1] / "README.md"
    print("\n".join(block(readme.read_text(encoding="utf-8"), sys.argv[1])))
