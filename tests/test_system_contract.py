"""What every built-in system must have, as the guide "Add a system" says: a gallery heading and a derivation page.

Each experiment crossdyn registers comes from a module (or a package above it) that
declares ``GALLERY_HEADING`` (its section of the gallery) and ``DERIVATION_PAGE`` (the
page under docs/derivations/ deriving what it checks), and that page exists and is in
the derivations' table of contents.  The third part of the contract, a plot from every
experiment, is held by tests/test_docs.py, which runs every experiment to build the
gallery and fails on a page without one.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

from crossdyn.experiments.core.registry import Experiment, experiments

ROOT = Path(__file__).resolve().parents[1]
DERIVATIONS = ROOT / "docs" / "derivations"


def _toctree(index: Path) -> set[str]:
    text = index.read_text()
    block = re.search(r"```\{toctree\}\n(.*?)```", text, re.S)
    assert block, f"{index} has no toctree"
    return {line.strip() for line in block.group(1).splitlines() if line.strip() and not line.startswith(":")}


def contract_gaps(exps: dict[str, Experiment], derivations: Path = DERIVATIONS) -> list[str]:
    """One line per experiment that breaks the contract: what is missing, and where to add it."""
    listed = _toctree(derivations / "index.md")
    gaps = []
    for name, exp in exps.items():
        where = exp.run.__module__
        if exp.declared("GALLERY_HEADING") is None:
            gaps.append(f"{name}: {where} declares no GALLERY_HEADING")
        page = exp.declared("DERIVATION_PAGE")
        if page is None:
            gaps.append(f"{name}: {where} declares no DERIVATION_PAGE")
        elif not (derivations / f"{page}.md").is_file():
            gaps.append(f"{name}: no page docs/derivations/{page}.md")
        elif page not in listed:
            gaps.append(f"{name}: docs/derivations/{page}.md is not in docs/derivations/index.md's toctree")
    return gaps


def _builtin() -> dict[str, Experiment]:
    """crossdyn's systems' experiments.  Not the machinery's: an experiment a test made with a core factory
    (``register_model_check``) is a user's, registered in this process only."""
    return {name: exp for name, exp in experiments().items() if exp.run.__module__.startswith("crossdyn.experiments.")
            and not exp.run.__module__.startswith("crossdyn.experiments.core.")}


def test_every_builtin_system_keeps_the_contract():
    exps = _builtin()
    assert len(exps) >= 36
    gaps = contract_gaps(exps)
    assert gaps == [], "\n".join(gaps)


def test_headings_are_few_and_named_in_words():
    """A heading is a sentence for readers, never a module path, and systems share a few of them."""
    headings = {exp.declared("GALLERY_HEADING") for exp in _builtin().values()}
    assert all(h and "crossdyn." not in h and "_" not in h for h in headings), headings
    assert len(headings) <= 8, headings


def test_the_contract_check_sees_what_is_missing(tmp_path, monkeypatch):
    """A system module with no declarations, one naming a page that does not exist, one not in the toctree."""
    (tmp_path / "index.md").write_text("# D\n\n```{toctree}\n:maxdepth: 1\n\nlisted\n```\n")
    (tmp_path / "listed.md").write_text("# listed\n")
    (tmp_path / "unlisted.md").write_text("# unlisted\n")
    cases = {"bare": {}, "nopage": {"GALLERY_HEADING": "H", "DERIVATION_PAGE": "missing"},
             "unlisted": {"GALLERY_HEADING": "H", "DERIVATION_PAGE": "unlisted"},
             "fine": {"GALLERY_HEADING": "H", "DERIVATION_PAGE": "listed"}}
    exps = {}
    for name, attributes in cases.items():
        module = types.ModuleType(f"probe_system_{name}")
        module.__dict__.update(attributes)
        monkeypatch.setitem(__import__("sys").modules, module.__name__, module)
        run = types.FunctionType((lambda ctx: {}).__code__, {}, name)
        run.__module__ = module.__name__
        exps[name] = Experiment(name, "s", "e", run)
    gaps = contract_gaps(exps, tmp_path)
    assert gaps == ["bare: probe_system_bare declares no GALLERY_HEADING",
                    "bare: probe_system_bare declares no DERIVATION_PAGE",
                    "nopage: no page docs/derivations/missing.md",
                    "unlisted: docs/derivations/unlisted.md is not in docs/derivations/index.md's toctree"]


def test_a_package_declares_for_its_modules(monkeypatch):
    """An experiment in a package's module without its own declaration takes the nearest package's."""
    import sys

    package, module = types.ModuleType("probe_pkg"), types.ModuleType("probe_pkg.sub.leaf")
    setattr(package, "GALLERY_HEADING", "Probe systems")  # noqa: B010 (a module attribute mypy cannot see)
    for m in (package, module):
        monkeypatch.setitem(sys.modules, m.__name__, m)
    run = types.FunctionType((lambda ctx: {}).__code__, {}, "leaf")
    run.__module__ = module.__name__
    exp = Experiment("leaf", "s", "e", run)
    assert exp.declared("GALLERY_HEADING") == "Probe systems"
    assert exp.declared("DERIVATION_PAGE") is None
