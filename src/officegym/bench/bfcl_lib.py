"""The one module that imports bfcl-eval: its data files, its AST checker, its helpers, its version.

Two things about the package shape how it is imported:

* Importing `bfcl_eval.constants.eval_config` makes `result/`, `score/` and `.file_locks/` under
  `$BFCL_PROJECT_ROOT`, by default the folder that holds site-packages. officegym points that
  variable at its cache (unless the user set it) before the first import.
* The AST checker imports `bfcl_eval.constants.model_config`, which imports the handler of every
  model on the leaderboard and so every vendor SDK (anthropic, google-genai, cohere, mistralai,
  qwen-agent, tree-sitter, ...). The checker reads one field of that table, `underscore_to_dot`,
  to decide whether a dotted name ("math.factorial") is compared as "math_factorial". officegym
  gives the checker the original names, so that answer is always "no": the checker is imported
  with a stand-in table that says so, and the stand-in is removed from `sys.modules` right after,
  so a later import of the real module gets the real one.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from functools import cache
from pathlib import Path
from typing import Any

PACKAGE = "bfcl-eval"
TESTED_VERSION = "2026.3.23"
INSTALL_HINT = (
    f"pip install --no-deps {PACKAGE}=={TESTED_VERSION} filelock "
    "(its declared dependencies are every model vendor's SDK; the data and the AST checker need none of them)"
)
_CHECKER = "bfcl_eval.eval_checker.ast_eval.ast_checker"
_MODEL_CONFIG = "bfcl_eval.constants.model_config"


class BfclUnavailable(RuntimeError):
    """bfcl-eval (or what its data loader needs) is not installed."""


def _project_root() -> Path:
    cache_root = Path(os.environ.get("OFFICEGYM_CACHE") or Path.home() / ".cache" / "officegym")
    return cache_root / "bfcl-eval"


@cache
def _utils() -> types.ModuleType:
    if "BFCL_PROJECT_ROOT" not in os.environ:
        root = _project_root()
        root.mkdir(parents=True, exist_ok=True)
        os.environ["BFCL_PROJECT_ROOT"] = str(root)
    try:
        return importlib.import_module("bfcl_eval.utils")
    except ImportError as exc:
        raise BfclUnavailable(f"BFCL needs {PACKAGE} ({exc}); {INSTALL_HINT}") from None


def version() -> str:
    """The installed bfcl-eval version (BfclUnavailable when it is not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version(PACKAGE)
    except PackageNotFoundError:
        raise BfclUnavailable(f"BFCL needs {PACKAGE}; {INSTALL_HINT}") from None


def category_mapping() -> types.ModuleType:
    _utils()
    return importlib.import_module("bfcl_eval.constants.category_mapping")


def load_prompts(category: str, hint: bool) -> list[dict[str, Any]]:
    """BFCL's test entries of one category, as its generation step (`hint=True`: the language note
    in each description, Java/JavaScript types turned into strings) or as its checker (`False`)
    reads them."""
    return _utils().load_dataset_entry(category, include_prereq=False, include_language_specific_hint=hint)


def load_answers(category: str) -> list[dict[str, Any]] | None:
    """The possible answers of one category, in entry order; None for (ir)relevance categories."""
    utils = _utils()
    if utils.is_relevance_or_irrelevance(category):
        return None
    return utils.load_ground_truth_entry(category)


def is_function_calling_format(decoded: Any) -> bool:
    return bool(_utils().is_function_calling_format_output(decoded))


def is_empty_output(decoded: Any) -> bool:
    return bool(_utils().is_empty_output(decoded))


def is_relevance_or_irrelevance(category: str) -> bool:
    return bool(_utils().is_relevance_or_irrelevance(category))


class _NoRenaming(dict):
    """Stand-in for model_config.MODEL_CONFIG_MAPPING: every model keeps dots in names."""

    def __missing__(self, key: str) -> Any:
        return types.SimpleNamespace(underscore_to_dot=False)


@cache
def _checker() -> tuple[Any, Any, str]:
    """(ast_checker, Language enum, the model name to pass so that names are compared as given)."""
    _utils()
    module = sys.modules.get(_CHECKER)
    if module is None:
        stand_in = None
        if _MODEL_CONFIG not in sys.modules:
            stand_in = types.ModuleType(_MODEL_CONFIG)
            stand_in.MODEL_CONFIG_MAPPING = _NoRenaming()  # type: ignore[attr-defined]
            sys.modules[_MODEL_CONFIG] = stand_in
        try:
            module = importlib.import_module(_CHECKER)
        except ImportError as exc:
            raise BfclUnavailable(f"bfcl-eval's AST checker does not import ({exc}); {INSTALL_HINT}") from None
        finally:
            if stand_in is not None and sys.modules.get(_MODEL_CONFIG) is stand_in:
                del sys.modules[_MODEL_CONFIG]
    mapping = module.MODEL_CONFIG_MAPPING
    model_name = "officegym"
    if not isinstance(mapping, _NoRenaming):  # the real table was loaded first: pick a model that keeps dots
        model_name = next(key.replace("/", "_") for key, cfg in mapping.items()
                          if not cfg.underscore_to_dot and "_" not in key)
    enums = importlib.import_module("bfcl_eval.constants.enums")
    return module.ast_checker, enums.Language, model_name


def language_of(category: str) -> Any:
    utils = _utils()
    language = _checker()[1]
    if utils.is_java(category):
        return language.JAVA
    if utils.is_js(category):
        return language.JAVASCRIPT
    return language.PYTHON


def ast_check(functions: list[dict[str, Any]], decoded: list[dict[str, Any]], answer: list[dict[str, Any]],
              category: str) -> dict[str, Any]:
    """bfcl-eval's `ast_checker` on one entry: `functions` as the checker reads them (no language
    hint), `decoded` the model's calls as `[{name: {param: value}}]`, `answer` the possible answer."""
    check, _, model_name = _checker()
    return check(functions, decoded, answer, language_of(category), category, model_name)


@cache
def category_size(category: str) -> int:
    """How many entries a category holds in full."""
    return len(load_prompts(category, hint=False))
