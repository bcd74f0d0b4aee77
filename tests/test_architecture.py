"""The layers and the machinery stay apart: analytic/ and controllers/ never import mujoco, and
experiments/core (the machinery) never names a system: systems register themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "experiments" / "core"
SYSTEMS = sorted({p.stem for p in (ROOT / "experiments").iterdir() if p.suffix == ".py" or p.is_dir()}
                 - {"__init__", "__main__", "core", "testing", "api", "common", "__pycache__"})


def _imported(path: Path, parts: tuple[str, ...] | None = None) -> list[tuple[int, str]]:
    """Every module a file imports, by ``import``/``from`` or as a ``crossdyn.`` module-name string.

    ``parts``: the file's place in the repository (default: from its path), for relative imports.
    """
    parts = parts or path.relative_to(ROOT).with_suffix("").parts
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the file's package
                package = ".".join(parts[: -node.level])
                base = f"crossdyn.{package}" + (f".{base}" if base else "")
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("crossdyn."):
            found.append((node.lineno, node.value))
    return found


def _system_imports(path: Path, parts: tuple[str, ...] | None = None, own: str | None = None) -> list[str]:
    """The imports of a system's module by ``path`` (``own``: the system the file belongs to, allowed)."""
    return [f"{path.name}:{line}: {name}" for line, name in _imported(path, parts)
            if any(name == f"crossdyn.experiments.{s}" or name.startswith(f"crossdyn.experiments.{s}.")
                   for s in SYSTEMS if s != own)]


def _files_of(system: str) -> list[Path]:
    folder = ROOT / "experiments" / system
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [folder.with_suffix(".py")]


def test_there_are_systems_and_core_files_to_check():
    assert {"two_link", "biped", "rigid_box", "cart_pole", "systems"} <= set(SYSTEMS)
    assert len(list(CORE.rglob("*.py"))) > 20


def test_core_names_no_system():
    offending = [hit for path in sorted(CORE.rglob("*.py")) for hit in _system_imports(path)]
    assert offending == [], "experiments/core imports a system (register it through an entry point instead):\n" + \
        "\n".join(offending)


def test_systems_stand_alone():
    """A system imports the machinery, the hand layers, experiments/common and its own package, never
    another system: what two systems share lives in experiments/common, which imports no system."""
    offending = [f"{system}: {hit}" for system in SYSTEMS if system != "systems" for path in _files_of(system)
                 for hit in _system_imports(path, own=system)]
    offending += [f"common: {hit}" for path in sorted((ROOT / "experiments" / "common").rglob("*.py"))
                  for hit in _system_imports(path)]
    assert offending == [], "a system imports another (move what they share to experiments/common):\n" + \
        "\n".join(offending)


def test_the_check_sees_a_system_import(tmp_path):
    """The scan has teeth: an import, a relative import and a module-name string are all caught."""
    fake = tmp_path / "probe.py"
    fake.write_text("from crossdyn.experiments.biped import tune\nfrom ..two_link import VARIANTS\n"
                    "MODULE = 'crossdyn.experiments.rigid_box'\nfrom crossdyn.experiments.core import loop\n")
    hits = _system_imports(fake, ("experiments", "core", "probe"))
    assert {int(hit.split(":")[1]) for hit in hits} == {1, 2, 3}, hits


def _private_uses(path: Path) -> list[str]:
    """``file:line: name`` for each private (``_name``) name of another crossdyn module that a file imports, or
    reads off a crossdyn module or object it imported (``closed_loop._plug``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    imported, found = set(), []

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("crossdyn")):
            found += [f"{path.name}:{node.lineno}: {alias.name}" for alias in node.names if private(alias.name)]
            imported |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.asname or alias.name.split(".")[0] for alias in node.names
                         if alias.name.startswith("crossdyn")}
    found += [f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}" for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
              and node.value.id in imported]
    return found


# Private names another module still imports, each with the module that should make it public.
PRIVATE_IMPORTS_LEFT = {
    "tune.py:100: _Parser",  # core/cli/__init__.py's parser, shared by the tune command
    "tune.py:234: _meets",  # core/sweep/experiment.py's constraint test
}


def test_modules_share_public_names_only():
    """A module uses another's public names, never its ``_private`` ones: what two modules share is part of
    the one that defines it (named, documented), as the closed loop's set-up is ``loop/setup.py``'s."""
    used = [hit for layer in ("analytic", "controllers", "experiments") for path in sorted((ROOT / layer).rglob("*.py"))
            for hit in _private_uses(path)]
    assert sorted(set(used) - PRIVATE_IMPORTS_LEFT) == [], "\n".join(used)


def test_the_private_name_check_has_teeth(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text("from crossdyn.experiments.core.loop.setup import _steps, at\n"
                    "from crossdyn.experiments.biped import closed_loop\nimport numpy as np\n"
                    "closed_loop._plug(1)\nclosed_loop.plug(2)\nnp._NoValue\nfrom .setup import _x\n")
    assert _private_uses(fake) == ["probe.py:1: _steps", "probe.py:7: _x", "probe.py:4: closed_loop._plug"]


def _front_door_imports(path: Path) -> list[str]:
    """``file:line`` of each import of the front door itself (``import crossdyn``, ``from crossdyn import X``)."""
    return [f"{path.name}:{node.lineno}" for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, ast.ImportFrom) and node.module == "crossdyn" and not node.level
            or isinstance(node, ast.Import) and any(alias.name == "crossdyn" for alias in node.names)]


@pytest.mark.parametrize("layer", ["analytic", "controllers"])
def test_the_hand_layers_never_import_the_front_door(layer):
    """``import crossdyn`` is the MuJoCo layer's door for users; the layers beneath it never go through it."""
    offending = [hit for p in sorted((ROOT / layer).rglob("*.py")) for hit in _front_door_imports(p)]
    assert offending == []


def test_the_front_door_check_has_teeth(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text("from crossdyn import renamed\nimport crossdyn\nfrom crossdyn.analytic import rnea\n"
                    "import crossdyn.analytic\n")
    assert _front_door_imports(fake) == ["probe.py:1", "probe.py:2"]


@pytest.mark.parametrize("layer", ["analytic", "controllers"])
def test_the_hand_layers_never_import_mujoco(layer):
    offending = [f"{p.relative_to(ROOT)}:{line}" for p in sorted((ROOT / layer).rglob("*.py"))
                 for line, name in _imported(p) if name == "mujoco" or name.startswith("mujoco.")]
    assert offending == []


def test_systems_register_through_entry_points():
    """crossdyn's own experiments and subcommands come from its package metadata, as a user package's do."""
    import importlib.metadata

    experiments = {e.name: e.value for e in importlib.metadata.entry_points(group="crossdyn.experiments")
                   if e.dist is not None and e.dist.name == "crossdyn"}
    commands = {e.name for e in importlib.metadata.entry_points(group="crossdyn.commands")}
    assert experiments == {"crossdyn": "crossdyn.experiments.systems"}
    assert "check two-link" in commands
    # The biped's tunings are ordinary registered experiments the one tune runs, not commands of their own.
    from crossdyn.experiments.core.registry import experiments as registered

    assert not {command for command in commands if command.startswith("tune")}
    assert {"biped-balance-tune", "biped-robustness-map"} <= set(registered())
