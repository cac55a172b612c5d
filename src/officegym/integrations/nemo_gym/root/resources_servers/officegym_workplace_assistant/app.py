"""NeMo Gym entrypoint of officegym's Workplace Assistant (officegym/integrations/nemo_gym).

NeMo Gym's launcher runs this file with the Python of the venv it built from requirements.txt,
in this folder, with NEMO_GYM_CONFIG_DICT and NEMO_GYM_CONFIG_PATH set. The officegym it runs is
the one this file ships in (six folders up), so that the config, this file and the server always
come from one version; the venv provides officegym's dependencies. A copy of this file outside an
officegym tree uses the officegym installed in the venv.
"""

import importlib.machinery
import importlib.util
import sys
from pathlib import Path


def _load_officegym() -> None:
    if "officegym" in sys.modules:
        return
    home = Path(__file__).resolve().parents[6]  # the folder that holds officegym/
    spec = importlib.machinery.PathFinder.find_spec("officegym", [str(home)])
    if spec is None or spec.loader is None:
        return  # not inside an officegym tree: the normal import below finds an installed one
    module = importlib.util.module_from_spec(spec)
    sys.modules["officegym"] = module
    spec.loader.exec_module(module)


if __name__ == "__main__":
    _load_officegym()
    from officegym.integrations.nemo_gym.launch import main

    raise SystemExit(main())
