"""One meaning per public name: a name the front door exports is that object in every public module.

``crossdyn.simulate`` is the generic closed loop, ``crossdyn.run`` runs registered
experiments, ``crossdyn.Trace`` is the loop's trace, and so on; a public module of
crossdyn (one listed in its package, with ``__all__``) that exports one of those
names exports the same object (a deliberate re-export), never another thing under
the same name.  And no name has a second, older one: crossdyn carries no deprecated
aliases or shims (a renamed name is renamed everywhere, its old name gone).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import crossdyn

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("crossdyn.analytic", "crossdyn.controllers", "crossdyn.experiments", "crossdyn.testing")
# Folders that are another package under a second import name (crossdyn.testing's source is
# experiments/testing, the front door's is experiments/api): their modules are read once, by that name.
ALIASES = ("crossdyn.experiments.testing", "crossdyn.experiments.api")


def public_modules() -> list[str]:
    """Every public module of crossdyn: the packages and the modules below them with no ``_`` in their name."""
    names = ["crossdyn"]
    for package in PACKAGES:
        names.append(package)
        path = importlib.import_module(package).__path__
        names += [m.name for m in pkgutil.walk_packages(path, package + ".")]
    return [name for name in names if not any(part.startswith("_") for part in name.split("."))
            and not name.startswith(ALIASES)]


def exports(modules: list[str]) -> dict[str, dict[str, object]]:
    """name -> {module: the object it exports under that name}, over the modules' ``__all__``."""
    found: dict[str, dict[str, object]] = {}
    for module in modules:
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", ()):
            found.setdefault(name, {})[module] = getattr(mod, name)
    return found


def clashes(found: dict[str, dict[str, object]], names) -> dict[str, list[str]]:
    """The ``names`` that some module exports as a different object from another: name -> the modules."""
    return {name: sorted(found[name]) for name in names
            if name in found and len({id(obj) for obj in found[name].values()}) > 1}


def test_every_front_door_name_means_one_thing_everywhere():
    modules = public_modules()
    assert {"crossdyn.experiments.biped.closed_loop", "crossdyn.analytic.unit_vector",
            "crossdyn.experiments.biped.firmware", "crossdyn.testing.runner"} <= set(modules)
    assert clashes(exports(modules), crossdyn.API) == {}


def test_the_check_sees_a_second_meaning():
    """The check has teeth: a module exporting its own ``simulate`` beside the front door's is named."""
    found = {"simulate": {"crossdyn": crossdyn.simulate, "crossdyn.experiments": crossdyn.simulate},
             "run": {"crossdyn": crossdyn.run, "crossdyn.somewhere": lambda: None}}
    assert clashes(found, ["simulate", "run"]) == {"run": ["crossdyn", "crossdyn.somewhere"]}


# What compatibility weight looks like in the source: a shim resolving old names, a table of moved names, a warning
# that a name is deprecated.
WEIGHT = re.compile(r"renamed\(|_MOVED|DeprecationWarning")


def weight(paths) -> list[str]:
    """``file:line: text`` of every line of ``paths`` that carries compatibility weight."""
    return [f"{path.name}:{n}: {line.strip()}" for path in paths
            for n, line in enumerate(path.read_text().splitlines(), start=1) if WEIGHT.search(line)]


def test_no_compatibility_weight():
    paths = [p for layer in ("analytic", "controllers", "experiments") for p in sorted((ROOT / layer).rglob("*.py"))]
    assert len(paths) > 100 and weight(paths) == []


def test_the_weight_check_has_teeth(tmp_path):
    shim = tmp_path / "shim.py"
    shim.write_text("import warnings\n__getattr__ = renamed(__name__, {'run': 'run_short'}, globals())\n"
                    "_MOVED = {}\nwarnings.warn('old', DeprecationWarning)\nx = 1\n")
    assert [hit.split(":")[1] for hit in weight([shim])] == ["2", "3", "4"]
