"""Imports a reader can follow: no import cycles, imports at the top of each module, and each
internal import naming its file by its path.

The import graph is read from the source (``ast``) of every module of analytic/,
controllers/ and experiments/, function-level imports included, so a cycle cannot
hide inside a function.  A function-level import is allowed only where it is listed
below with its reason (an optional dependency, or a slow one the command line's
start-up must not pay), and the line says why in a comment.

The folders are not the import names (pyproject's package-dir maps analytic/ to
crossdyn.analytic, and so on), so crossdyn's own modules are imported relatively:
``from ..checks.report import CheckReport`` then names experiments/core/checks/report.py
by the importing file's path, which is what a reader and a tool see.  The exceptions,
where a folder is not its import name, are :data:`ELSEWHERE` (the contributor guide
states the rule).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("analytic", "controllers", "experiments")
# crossdyn's own modules imported inside functions: the ceiling (start-up time only).
OWN_LATE_MAX = 25

# Why -> the (file, module as imported) that are imported inside a function for that reason.
LATE_REASONS = {
    "SymPy's start-up (~1 s) is for the symbolic derivations and runs only": [
        ("analytic/biped/free_hip.py", "sympy"), ("experiments/lagrange.py", "sympy"),
        ("experiments/lagrange.py", "crossdyn.analytic")],  # crossdyn.analytic.lagrange imports SymPy
    "python-control imports SciPy's signal and stats, which every command's start-up would pay": [
        ("controllers/lqr.py", "control"), ("experiments/core/linearize.py", "control"),
        ("experiments/core/margins.py", "control")],
    "SciPy's stats (~0.5 s) is for confidence intervals, critical values and Latin hypercubes only": [
        ("experiments/core/identify/fit.py", "scipy"), ("experiments/core/identify/power.py", "scipy"),
        ("experiments/core/identify/self_test.py", "scipy"),
        ("experiments/core/sweep/space.py", "scipy.stats")],
    "SciPy's integrate is slow to import; only an ODE reference solution uses it": [
        ("analytic/biped/jump.py", "scipy.integrate"), ("analytic/rigid_box.py", "scipy.integrate")],
    "mujoco.sysid imports SciPy's signal and stats (~1 s)": [("experiments/core/identify/__init__.py", "mujoco")],
    "pyplot is for the log plots only, its backend chosen before it is imported": [
        ("experiments/core/identify/outputs.py", "matplotlib"),
        ("experiments/core/identify/outputs.py", "matplotlib.pyplot")],
    "optional: Dask (the dask extra), imageio (the video extra), resource (Unix only)": [
        ("experiments/core/dask_client.py", "distributed"), ("experiments/core/loop/simulate.py", "imageio.v3"),
        ("experiments/core/isolation.py", "resource")],
    "Optuna is slow to import, and only a search needs it (crossdyn's sampler imports it)": [
        ("experiments/core/sweep/search.py", "optuna"),
        ("experiments/core/sweep/search.py", "crossdyn.experiments.core.epsilon_sampler")],
    "the compiled kernels import Numba (~1 s), and a machine without Numba runs the classes": [
        ("experiments/biped/closed_loop.py", "crossdyn.controllers.biped")],
    "the commands import MuJoCo and matplotlib, which read MUJOCO_GL and MPLBACKEND, set by main() first": [
        ("experiments/core/cli/__init__.py", "crossdyn.experiments.core.cli")],
    "the pytest plugin (and so crossdyn.testing) loads in every pytest run: crossdyn's machinery, NumPy and "
    "matplotlib only once a suite uses them": [
        ("experiments/testing/plugin.py", "crossdyn.testing"),
        ("experiments/testing/plugin.py", "crossdyn.testing.baseline_fixture"),
        ("experiments/testing/plugin.py", "crossdyn.experiments.core.errors"),
        ("experiments/testing/plugin.py", "crossdyn.experiments.core.validate"),
        ("experiments/testing/__init__.py", "crossdyn.experiments.core"),
        ("experiments/testing/__init__.py", "crossdyn.experiments.core.errors"),
        ("experiments/testing/__init__.py", "crossdyn.experiments.core.validate")],
}
ALLOWED_LATE = {place: why for why, places in LATE_REASONS.items() for place in places}


@dataclass(frozen=True)
class Import:
    """One import statement: where it is, what it loads (absolute names), and whether a function holds it."""

    file: str
    line: int
    module: str
    names: tuple[str, ...]
    late: bool
    typing_only: bool
    commented: bool
    level: int = 0  # a relative import's dots
    written: str = ""  # its module as written (after the dots)


def package_dirs(root: Path = ROOT) -> dict[tuple[str, ...], str]:
    """Folder (as path parts) -> the package it installs as, from pyproject's package-dir mapping."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {Path(folder).parts: package for package, folder in setuptools["package-dir"].items()}


def module_name(path: Path, root: Path = ROOT, dirs: dict | None = None) -> str:
    """The import name of a source file: the package of its deepest mapped folder, then the rest of its path."""
    dirs = package_dirs(root) if dirs is None else dirs
    parts = path.relative_to(root).with_suffix("").parts
    folder = max((f for f in dirs if parts[: len(f)] == f), key=len)
    rest = [p for p in parts[len(folder):] if p != "__init__"]
    return ".".join([dirs[folder], *rest])


def sources(root: Path = ROOT) -> dict[str, Path]:
    """Import name -> file, for every module of the three layers (a folder mapped twice counts once, by its
    deepest mapping: experiments/testing is crossdyn.testing)."""
    dirs = package_dirs(root)
    return {module_name(path, root, dirs): path for layer in LAYERS for path in sorted((root / layer).rglob("*.py"))}


def _typing_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path, root: Path = ROOT, dirs: dict | None = None) -> list[Import]:
    """Every import statement of a file, relative ones resolved by the file's import name."""
    name = module_name(path, root, dirs)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    text = path.read_text()
    lines = text.splitlines()
    found: list[Import] = []

    def visit(node: ast.AST, late: bool, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = late or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                statement = lines[child.lineno - 1 : child.end_lineno]
                above = lines[child.lineno - 2].strip() if child.lineno > 1 else ""
                commented = any("#" in row for row in statement) or above.startswith("#")
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        found.append(Import(str(path.relative_to(root)), child.lineno, alias.name, (), late,
                                            typing_only, commented))
                else:
                    module = child.module or ""
                    if child.level:
                        base = package.split(".")[: len(package.split(".")) - child.level + 1]
                        module = ".".join(base + ([module] if module else []))
                    found.append(Import(str(path.relative_to(root)), child.lineno, module,
                                        tuple(a.name for a in child.names), late, typing_only, commented,
                                        child.level, child.module or ""))
            visit(child, inner, typing_only or _typing_block(child))

    visit(ast.parse(text, filename=str(path)), False, False)
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the crossdyn modules it imports (at the top or in a function; ``TYPE_CHECKING`` blocks,
    which never run, left out).  ``from package import name`` is the submodule when one is so named."""
    modules = sources(root)
    dirs = package_dirs(root)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imp in imports(path, root, dirs):
            if imp.typing_only:
                continue
            targets = [f"{imp.module}.{n}" for n in imp.names if f"{imp.module}.{n}" in modules]
            if len(targets) < len(imp.names) or not imp.names:
                targets.append(imp.module)
            edges[name] |= {t for t in targets if t in modules and t != name}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: every strongly connected set of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted(found)


def late_imports(root: Path = ROOT) -> list[Import]:
    dirs = package_dirs(root)
    return [imp for path in sources(root).values() for imp in imports(path, root, dirs) if imp.late]


def test_there_is_no_import_cycle():
    edges = graph()
    assert len(edges) > 150 and sum(map(len, edges.values())) > 500  # the whole package was read
    found = cycles(edges)
    assert found == [], "import cycles (move the shared piece to the module both can import):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_function_level_imports_are_the_listed_ones_and_say_why():
    late = late_imports()
    unlisted = [f"{i.file}:{i.line}: {i.module}" for i in late if (i.file, i.module) not in ALLOWED_LATE]
    assert unlisted == [], "import these at the top of the module (or list them here with the reason):\n" + \
        "\n".join(unlisted)
    silent = [f"{i.file}:{i.line}: {i.module}" for i in late if not i.commented]
    assert silent == [], "a function-level import says why in a comment:\n" + "\n".join(silent)
    stale = sorted(set(ALLOWED_LATE) - {(i.file, i.module) for i in late})
    assert stale == [], f"listed but imported at the top now (drop them from ALLOWED_LATE): {stale}"


def test_crossdyn_imports_its_own_modules_late_only_for_start_up():
    own = [i for i in late_imports() if i.module.startswith("crossdyn")]
    assert 0 < len(own) <= OWN_LATE_MAX, [f"{i.file}:{i.line}" for i in own]


def test_the_checks_see_a_hidden_cycle_and_an_unlisted_late_import(tmp_path):
    """A cycle closed by a function-level, relative import is found, and so is the import itself."""
    mapping = "".join(f'"crossdyn.{layer}" = "{layer}"\n' for layer in LAYERS)
    (tmp_path / "pyproject.toml").write_text("[tool.setuptools.package-dir]\n" + mapping)
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
        (tmp_path / layer / "__init__.py").write_text("")
    (tmp_path / "experiments" / "a.py").write_text("from crossdyn.experiments.b import B\n\nA = 1\n")
    (tmp_path / "experiments" / "b.py").write_text("B = 2\n\n\ndef f():\n    from .a import A\n\n    return A\n")
    (tmp_path / "analytic" / "c.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                                "    from crossdyn.analytic import d\n")
    (tmp_path / "analytic" / "d.py").write_text("from crossdyn.analytic import c\n")
    assert cycles(graph(tmp_path)) == [["crossdyn.experiments.a", "crossdyn.experiments.b"]]  # c <-> d never runs
    assert [(i.file, i.line, i.module, i.commented) for i in late_imports(tmp_path)] == \
        [("experiments/b.py", 5, "crossdyn.experiments.a", False)]


def test_module_names_follow_the_package_dir_mapping():
    names = sources()
    assert names["crossdyn"] == ROOT / "experiments" / "api" / "__init__.py"
    assert names["crossdyn.testing.plugin"] == ROOT / "experiments" / "testing" / "plugin.py"
    assert names["crossdyn.experiments.core.checks.report"] == ROOT / "experiments" / "core" / "checks" / "report.py"
    assert "crossdyn.experiments.testing.plugin" not in names


# Packages whose folder is not their import name: the front door, crossdyn (experiments/api/__init__.py),
# and crossdyn.testing (experiments/testing/).  A relative import climbing out of them lands elsewhere by
# path, so their modules import the rest of crossdyn absolutely, and the rest imports crossdyn.testing and
# the front door's own names (``from crossdyn import lazy_names``) absolutely.
ELSEWHERE = ("crossdyn", "crossdyn.testing")


def file_of(name: str, root: Path = ROOT, dirs: dict | None = None) -> Path | None:
    """The file Python imports for module ``name`` (by the package-dir mapping), or None when it is no module."""
    dirs = package_dirs(root) if dirs is None else dirs
    folders = {package: folder for folder, package in dirs.items()}
    base = max((p for p in folders if name == p or name.startswith(p + ".")), key=len, default=None)
    if base is None:
        return None
    place = root.joinpath(*folders[base], *name[len(base):].split(".")[1:])
    for candidate in (place.with_suffix(".py"), place / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def by_path(path: Path, imp: Import, name: str) -> Path | None:
    """The file a relative import names, read by the importing file's path alone as a reader or a tool reads it
    (``..`` is the folder above): the module ``name`` if there is one, else the module it is imported from."""
    folder = path.parent
    for _ in range(imp.level - 1):
        folder = folder.parent
    place = folder.joinpath(*imp.written.split(".")) if imp.written else folder
    own = [place.with_suffix(".py")] if imp.written else []
    for candidate in (place / f"{name}.py", place / name / "__init__.py", *own, place / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _home(name: str, dirs: dict) -> str:
    """The package of the deepest package-dir mapping holding module ``name``."""
    return max((p for p in dirs.values() if name == p or name.startswith(p + ".")), key=len)


def unfollowable(root: Path = ROOT) -> list[str]:
    """Imports of crossdyn's own modules a reader cannot follow by path: a relative import whose file by path
    is not the file Python imports, and an absolute import outside the exceptions (:data:`ELSEWHERE`)."""
    dirs = package_dirs(root)
    bad = []
    for module, path in sources(root).items():
        home = _home(module, dirs)
        for imp in imports(path, root, dirs):
            if imp.module != "crossdyn" and not imp.module.startswith("crossdyn."):
                continue
            if imp.level:
                for name in imp.names:
                    python = file_of(f"{imp.module}.{name}", root, dirs) or file_of(imp.module, root, dirs)
                    reader = by_path(path, imp, name)
                    if reader != python:
                        bad.append(f"{imp.file}:{imp.line}: {name} of {imp.module}: by its path the import names "
                                   f"{reader}, Python imports {python}")
                continue
            packages = [f"crossdyn.{n}" for n in imp.names if f"crossdyn.{n}" in dirs.values()]
            for target in [imp.module] if imp.module != "crossdyn" else packages:  # from crossdyn import mjcf
                other = _home(target, dirs)
                if home == "crossdyn" or (home in ELSEWHERE and other != home) or (other in ELSEWHERE and
                                                                                   other != home):
                    continue
                bad.append(f"{imp.file}:{imp.line}: absolute import of {target}: import it relatively")
    return bad


def test_every_internal_import_names_its_file_by_its_path():
    bad = unfollowable()
    assert bad == [], "\n".join(bad)
    relative = [i for p in sources().values() for i in imports(p) if i.level]
    assert len(relative) > 500  # the rule is in use, not vacuous


def test_the_path_check_sees_a_climb_out_of_a_mapped_folder_and_an_absolute_import(tmp_path):
    """From crossdyn.testing (experiments/testing/), ``..experiments.core.errors`` is crossdyn's errors module to
    Python but experiments/experiments/core/errors.py by path; an absolute internal import is refused too."""
    (tmp_path / "pyproject.toml").write_text(
        "[tool.setuptools.package-dir]\n" + "".join(f'"crossdyn.{layer}" = "{layer}"\n' for layer in LAYERS)
        + '"crossdyn" = "experiments/api"\n"crossdyn.testing" = "experiments/testing"\n')
    for folder in ("analytic", "experiments/core", "experiments/api", "experiments/testing", "controllers"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "experiments" / "core" / "errors.py").write_text("class E(Exception):\n    pass\n")
    (tmp_path / "experiments" / "testing" / "helper.py").write_text("from ..experiments.core.errors import E\n")
    (tmp_path / "experiments" / "core" / "use.py").write_text(
        "from .errors import E\nfrom ...analytic import rnea\nfrom crossdyn.experiments.core.errors import E as F\n"
        "from crossdyn.testing import helper\n")
    (tmp_path / "analytic" / "rnea.py").write_text("")
    bad = unfollowable(tmp_path)
    assert [line.split(":")[:2] for line in bad] == [["experiments/core/use.py", "3"],
                                                     ["experiments/testing/helper.py", "1"]], bad
