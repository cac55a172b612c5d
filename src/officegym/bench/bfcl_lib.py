"""The one module that imports bfcl-eval: its data files, its AST checker, its multi-turn backends,
executor and checker, its helpers, its version.

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

import decimal
import importlib
import itertools
import os
import re
import sys
import types
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from officegym.core.cache import cache_root

PACKAGE = "bfcl-eval"
TESTED_VERSION = "2026.3.23"
INSTALL_HINT = (
    f"pip install --no-deps {PACKAGE}=={TESTED_VERSION} filelock mpmath "
    "(its declared dependencies are every model vendor's SDK; the data, the AST checker and the multi-turn "
    "backends need none of them; filelock and mpmath come with torch)"
)
_CHECKER = "bfcl_eval.eval_checker.ast_eval.ast_checker"
_MODEL_CONFIG = "bfcl_eval.constants.model_config"


class BfclUnavailable(RuntimeError):
    """bfcl-eval (or what its data loader needs) is not installed."""


def _project_root() -> Path:
    return cache_root() / "bfcl-eval"


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


# ---- multi-turn: the executable backends, the executor and the checker --------------------------
#
# bfcl-eval's executor (`multi_turn_utils.execute_multi_turn_func_call`) keeps each episode's backend
# instances in its own module's globals, under a name made of a model name, the entry id and the
# class, and runs call strings with `eval` in that namespace. officegym gives every episode and every
# check a model name of its own (so two episodes of one entry never share a backend) and deletes
# those globals when it is done. The strings it hands over are built by bfcl_session.render_call
# from validated, JSON-decoded calls, never from model text.

_MULTI_TURN_UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
_MULTI_TURN_CHECKER = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"


def _module(name: str) -> types.ModuleType:
    _utils()
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise BfclUnavailable(f"bfcl-eval's multi-turn code does not import ({exc}); {INSTALL_HINT}") from None


def max_steps_per_turn() -> int:
    """BFCL's MAXIMUM_STEP_LIMIT: a turn whose model keeps calling past it is force-terminated."""
    return int(_module("bfcl_eval.constants.default_prompts").MAXIMUM_STEP_LIMIT)


def added_functions_prompt() -> str:
    """The user message BFCL sends (to function-calling models) when functions are added mid-conversation."""
    return str(_module("bfcl_eval.constants.default_prompts").DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)


def is_long_context(category: str) -> bool:
    # bfcl-eval's own test: the entry's category names long_context (or composite).
    return "long_context" in category or "composite" in category


@cache
def backend_class(class_name: str) -> type:
    config = _module("bfcl_eval.constants.executable_backend_config")
    path = config.CLASS_FILE_PATH_MAPPING.get(class_name)
    if path is None:
        raise BfclUnavailable(f"bfcl-eval {version()} has no executable backend named {class_name!r}")
    return getattr(_module(path), class_name)


def backend_parameters(class_names: list[str], method: str) -> list[str] | None:
    """The parameter names, in order, of the backend method `method` (None when no class has it):
    what a positional argument in BFCL's ground truth binds to."""
    import inspect

    for class_name in reversed(class_names):  # bfcl-eval's executor: a later class's method wins
        func = getattr(backend_class(class_name), method, None)
        if callable(func) and not method.startswith("_"):
            return [p for p in inspect.signature(func).parameters if p != "self"]
    return None


@contextmanager
def _contained():
    """MathAPI sets the thread's decimal precision and mpmath's global one from model arguments;
    keep both from leaking out of a call."""
    mpmath = sys.modules.get("mpmath")
    dps = mpmath.mp.dps if mpmath is not None else None
    with decimal.localcontext():
        try:
            yield
        finally:
            if mpmath is not None:
                mpmath.mp.dps = dps
            elif "mpmath" in sys.modules:
                sys.modules["mpmath"].mp.dps = 15  # mpmath's default; it was first imported by the call


_episode_numbers = itertools.count(1)


def _instance_names(tag: str, entry_id: str, class_names: list[str]) -> list[str]:
    # The names bfcl-eval's executor gives the instances it keeps in its module globals.
    return [re.sub(r"[-./:]", "_", f"{tag}_{entry_id}_{c}_instance") for c in class_names]


def _forget(tags: list[str], entry_id: str, class_names: list[str]) -> None:
    namespace = vars(_module(_MULTI_TURN_UTILS))
    for tag in tags:
        for name in _instance_names(tag, entry_id, class_names):
            namespace.pop(name, None)


class Backends:
    """One episode's backend instances (the entry's `involved_classes`, loaded with its
    `initial_config`), run through bfcl-eval's executor. Close it to free the instances."""

    def __init__(self, entry: dict[str, Any], category: str):
        self.entry_id = str(entry["id"])
        self.classes = list(entry["involved_classes"])
        self.initial_config = entry.get("initial_config", {})
        self.long_context = is_long_context(category)
        self.tag = f"officegym_episode_{os.getpid()}_{next(_episode_numbers)}"
        self.instances: dict[str, Any] = {}
        self.execute([])  # make the instances now, as bfcl-eval's inference does

    def execute(self, call_strings: list[str]) -> list[str]:
        """The result text of each call (bfcl-eval's "Error during execution: ..." when one raises)."""
        run = _module(_MULTI_TURN_UTILS).execute_multi_turn_func_call
        with _contained():
            results, self.instances = run(call_strings, self.initial_config, self.classes, self.tag, self.entry_id,
                                          long_context=self.long_context, is_evaL_run=False)
        return [str(r) for r in results]

    def close(self) -> None:
        _forget([self.tag], self.entry_id, self.classes)
        self.instances = {}

    def __enter__(self) -> Backends:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def multi_turn_check(decoded: list[list[list[str]]], ground_truth: list[list[str]], entry: dict[str, Any],
                     category: str) -> dict[str, Any]:
    """bfcl-eval's `multi_turn_checker` on one entry: `decoded` holds, per user turn, the call
    strings of each model step that made calls; the checker re-executes them and the ground truth in
    fresh backends and compares states and results after every turn."""
    check = _module(_MULTI_TURN_CHECKER).multi_turn_checker
    tag = f"officegym_check_{os.getpid()}_{next(_episode_numbers)}"
    classes = list(entry["involved_classes"])
    prompt = {"id": entry["id"], "initial_config": entry.get("initial_config", {}), "involved_classes": classes}
    try:
        with _contained():
            return check(decoded, ground_truth, prompt, category, tag)
    finally:
        # The checker's model and ground-truth instances (bfcl-eval adds these suffixes to the name).
        _forget([f"{tag}_eval", f"{tag}_ground_truth_eval"], str(entry["id"]), classes)
