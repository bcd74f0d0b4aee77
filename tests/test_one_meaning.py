"""One meaning per public name: a name the front door exports is that object in every public module.

``crossdyn.simulate`` is the generic closed loop, ``crossdyn.run`` runs registered
experiments, ``crossdyn.Trace`` is the loop's trace, and so on; a public module of
crossdyn (one listed in its package, with ``__all__``) that exports one of those
names exports the same object (a deliberate re-export), never another thing under
the same name.  Renamed names still resolve, with a DeprecationWarning naming the
new one (each module's table of them: ``crossdyn.renamed``).
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings

import pytest

import crossdyn

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
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)  # an old name in __all__ would be a second meaning
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


def renames() -> list[tuple[str, str, str]]:
    """``(module, old name, new name)`` of every rename a public module declares (``crossdyn.renamed``)."""
    tables = {module: getattr(importlib.import_module(module), "__getattr__", None) for module in public_modules()}
    return [(module, old, new) for module, hook in tables.items() for old, new in getattr(hook, "renamed", {}).items()]


def test_the_renames_are_found():
    found = {(module, old) for module, old, _ in renames()}
    assert {("crossdyn.experiments.biped.closed_loop", "simulate"), ("crossdyn.experiments.biped.closed_loop", "Trace"),
            ("crossdyn.analytic.unit_vector", "simulate"), ("crossdyn.experiments.biped.firmware", "run"),
            ("crossdyn.testing.runner", "run")} <= found


@pytest.mark.parametrize("module, old, new", renames())
def test_renamed_names_warn_and_resolve(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old} is renamed: use {module}.{new}"):
        assert getattr(mod, old) is getattr(mod, new)
    assert old not in mod.__all__ and new in mod.__all__
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        mod.no_such_name  # noqa: B018
