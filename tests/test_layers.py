"""Imports point downwards only (shared/DESIGN.md): checked on the source, not by convention."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "officegym"
# The top floor: each may use the floors below, none another of them (what they share lives in core).
TOP = ("train", "eval", "review", "server")


def imported_packages(folder: str) -> dict[str, set[str]]:
    """officegym sub-package (or top-level module) -> the files of `folder` that import it."""
    out: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "officegym" and len(parts) > 1 and parts[1] != folder:
                    out.setdefault(parts[1], set()).add(str(path.relative_to(PACKAGE)))
    return out


def test_core_imports_nothing_else_of_ours():
    assert imported_packages("core") == {}


def test_environments_import_only_core():
    assert set(imported_packages("envs")) <= {"core"}


def test_the_top_floor_packages_do_not_import_each_other():
    for folder in TOP:
        found = {pkg: files for pkg, files in imported_packages(folder).items() if pkg in TOP}
        assert found == {}, f"{folder} imports {found}"


def test_policies_live_on_the_agent_floor_not_in_environments():
    found = []
    for path in sorted((PACKAGE / "envs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(f, ast.AsyncFunctionDef | ast.FunctionDef) and f.name == "complete" for f in node.body
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert found == []


# --- generic floors reach environments through the registry (DESIGN.md), not by importing them

GENERIC_FLOORS = ("agent", "train", "eval", "pipeline", "review", "core", "server", "cli")
ENVIRONMENT_PACKAGES = ("officegym.envs.roles", "officegym.envs.workplace")
# The files that still import an environment package directly, and why. It only shrinks: a file
# that stops importing one must leave it (the check below says so).
DIRECT_ENVIRONMENT_IMPORTS = {
    "agent/council.py": "the council runs report CouncilState and Grade, play a CouncilEpisode and check seat names",
    "train/sft_data.py": "council SFT rows carry each seat's tool specs (council_episode.seat_specs)",
    "server/serve.py": "serves the workplace with NeMo Gym's reference-compat settings (WorkplaceEnvironment)",
}


def direct_environment_imports() -> set[str]:
    """Files of the generic floors that import an environment package, anywhere in their body."""
    found = set()
    for folder in GENERIC_FLOORS:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                if any(n == pkg or n.startswith(pkg + ".") for n in names for pkg in ENVIRONMENT_PACKAGES):
                    found.add(str(path.relative_to(PACKAGE)))
    return found


def test_generic_floors_reach_environments_through_the_registry():
    found = direct_environment_imports()
    unlisted = sorted(found - set(DIRECT_ENVIRONMENT_IMPORTS))
    assert unlisted == [], f"these import officegym.envs.roles/workplace directly: use the registry or an environment hook ({unlisted})"
    stale = sorted(set(DIRECT_ENVIRONMENT_IMPORTS) - found)
    assert stale == [], f"these no longer import an environment package: take them off the allow-list ({stale})"


def test_one_rollout_loop_records_model_turns():
    """Model turns become trajectory turns in agent/loop.py alone (the council plays through it too)."""
    found = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if "Turn.from_completion(" in p.read_text(encoding="utf-8"))
    assert found == ["agent/loop.py"]


POLICY_CALLS = ("complete", "_ask")  # and any name with "submit" in it
TOOL_FEEDBACK = ("execute", "call", "_take_turn", "assistant_message")


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def turn_loops(source: str) -> list[int]:
    """The lines of the loops in `source` that ask a policy and feed tool results back: an agent loop."""
    found = []
    for loop in ast.walk(ast.parse(source)):
        if not isinstance(loop, ast.While | ast.For | ast.AsyncFor):
            continue
        names = [_callee(n) for n in ast.walk(loop) if isinstance(n, ast.Call)]
        asks = any(n in POLICY_CALLS or "submit" in n for n in names)
        feeds = any(n in TOOL_FEEDBACK for n in names) or any(
            isinstance(n, ast.Constant) and n.value == "tool" for n in ast.walk(loop))
        if asks and feeds:
            found.append(loop.lineno)
    return found


def test_one_rollout_loop_drives_policies_turn_by_turn():
    """No module but agent/loop.py asks a policy in a loop that runs tools and answers it (BFCL's
    multi-turn episodes play through it too: bench/bfcl_multi_turn.py)."""
    found = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if turn_loops(p.read_text(encoding="utf-8")))
    assert found == ["agent/loop.py"]


def test_the_turn_loop_check_sees_a_second_agent_loop():
    # the shape bench/bfcl_multi_turn.run_episode had before it played through agent/loop.py
    second = """
async def run_episode(case, submit):
    while True:
        completion = await submit(PolicyRequest(messages, tools))
        for call in completion.tool_calls:
            messages.append({"role": "tool", "content": backends.execute([render(call)])[0]})
"""
    assert turn_loops(second) == [3]
    assert turn_loops(second.replace("submit(", "policy.complete(").replace("backends.execute", "session.call"))


# --- the cli and pipeline packages: no import cycle between their modules, no private names shared

SPLIT_PACKAGES = ("cli", "pipeline")


def package_modules(folder: str, root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of officegym/`folder` (its __init__ is the package)."""
    out = {}
    for path in sorted((root / folder).rglob("*.py")):
        parts = ("officegym", *path.relative_to(root).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def intra_package_imports(folder: str, root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, anywhere in its body (inside functions
    and `if TYPE_CHECKING:` too): importing the package itself is importing its __init__."""
    modules = package_modules(folder, root)
    graph: dict[str, set[str]] = {name: set() for name in modules}

    def owner(name: str) -> str | None:  # the module a dotted name lives in, if one of ours
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                    base = f"{anchor}.{base}" if base else anchor
                # `from pkg import sub` imports the submodule, `from pkg import name` the package
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                found = owner(target)
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `graph` as the list of its nodes (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def private_uses(folder: str, root: Path = PACKAGE) -> list[str]:
    """Where a module of officegym/`folder` uses another module's underscore name: `from x import
    _name`, `import x._name`, or `x._name` on anything but self/cls (a module, or an object another
    module made, such as a Pipeline handed to the review rounds)."""

    def private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    found = []
    for path in package_modules(folder, root).values():
        where = path.relative_to(root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found += [f"{where}:{node.lineno}: from {node.module} import {a.name}" for a in node.names if private(a.name)]
            elif isinstance(node, ast.Import):
                found += [f"{where}:{node.lineno}: import {a.name}" for a in node.names
                          if any(private(part) for part in a.name.split("."))]
            elif (isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
                  and node.value.id not in ("self", "cls")):
                found.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_checks_see_a_cycle_and_private_names(tmp_path):
    """The two checks below on a package that breaks both rules (as pipeline.py and
    pipeline_review.py did: each imported the other, one used the other's _merge and p._say)."""
    pkg = tmp_path / "officegym" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from officegym.demo.run import Runner\n")
    (pkg / "run.py").write_text("def go():\n    from .review import rounds\n")
    (pkg / "review.py").write_text("from officegym.demo import run\nfrom officegym.demo.run import _merge\n\n"
                                   "def rounds(p):\n    p._say('x')\n")
    graph = intra_package_imports("demo", tmp_path / "officegym")
    assert graph == {"officegym.demo": {"officegym.demo.run"}, "officegym.demo.run": {"officegym.demo.review"},
                     "officegym.demo.review": {"officegym.demo.run"}}
    assert find_cycle(graph) == ["officegym.demo.run", "officegym.demo.review", "officegym.demo.run"]
    assert [use.split(": ", 1)[1] for use in private_uses("demo", tmp_path / "officegym")] == ["from officegym.demo.run import _merge", "p._say"]


def test_the_split_packages_import_no_cycle():
    for folder in SPLIT_PACKAGES:
        graph = intra_package_imports(folder)
        assert len(graph) > 1, folder
        assert find_cycle(graph) is None, f"{folder}: import cycle {' -> '.join(find_cycle(graph) or [])}"


def test_the_split_packages_use_no_other_modules_private_names():
    for folder in SPLIT_PACKAGES:
        assert private_uses(folder) == [], folder
