"""crossdyn installs and imports under one name, and the layers keep to their rule.

- The wheel built from the repository (``pip wheel .``, not editable) holds one
  top-level package, ``crossdyn``, with the MJCF files; installed in a fresh
  virtual environment it runs ``crossdyn run``.
- From a folder holding a user's own ``experiments/`` and ``controllers/``
  packages, both the user's packages and crossdyn's import, and the CLI runs
  (editable install and wheel alike).
- ``crossdyn.analytic`` and ``crossdyn.controllers`` never load MuJoCo.
- ``crossdyn.testing`` (source in ``experiments/testing/``) imports, and pytest
  loads its plugin through the ``pytest11`` entry point (editable install and
  wheel alike).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

USER_PACKAGES = {
    "experiments/__init__.py": "MINE = 'the user experiments package'\n",
    "controllers/__init__.py": "MINE = 'the user controllers package'\n",
    "analytic/__init__.py": "MINE = 'the user analytic package'\n",
}

# Imports the user's packages and crossdyn's side by side; prints what it found.
PROBE = """
import experiments, controllers, analytic
import crossdyn.experiments, crossdyn.controllers.biped.controller, crossdyn.analytic.two_link
from crossdyn import load_model, check_derivation, run, experiment, Param
assert experiments.MINE.startswith('the user') and controllers.MINE.startswith('the user'), 'user packages shadowed'
assert load_model('two_link_arm').nv == 2
print('both import')
"""


def _user_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "user_repo"
    for name, text in USER_PACKAGES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _run(cmd, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=600)


def test_every_package_folder_is_installed():
    """pyproject lists packages one by one (the folders map onto crossdyn.*): none may be missing.

    Each folder holding an ``__init__.py`` installs under the package its nearest
    ``package-dir`` folder maps to (``experiments/testing`` -> ``crossdyn.testing``).
    """
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    folders = {Path(folder).parts: package for package, folder in setuptools["package-dir"].items()}
    on_disk = set()
    for layer in ("analytic", "controllers", "experiments", "mjcf"):
        for init in (ROOT / layer).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT).parts
            mapped = max((f for f in folders if parts[:len(f)] == f), key=len)
            on_disk.add(".".join([folders[mapped], *parts[len(mapped):]]))
    assert listed == on_disk, f"missing from pyproject: {sorted(on_disk - listed)}; stale: {sorted(listed - on_disk)}"


def test_layers_never_import_mujoco():
    code = ("import sys, pkgutil, importlib, crossdyn.analytic, crossdyn.controllers\n"
            "for pkg in (crossdyn.analytic, crossdyn.controllers):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        importlib.import_module(m.name)\n"
            "print(sorted(k for k in sys.modules if k == 'mujoco' or k.startswith('mujoco.')))")
    out = _run([sys.executable, "-c", code], cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"analytic/controllers loaded {out.stdout}"


def test_layer_check_can_fail():
    """The probe above would see mujoco if a layer imported it (the check is not vacuous)."""
    code = "import sys, crossdyn.analytic, crossdyn.experiments.core.models\nprint('mujoco' in sys.modules)"
    out = _run([sys.executable, "-c", code], cwd=ROOT)
    assert out.stdout.strip() == "True", out.stderr


def test_user_packages_and_crossdyn_side_by_side(tmp_path):
    folder = _user_folder(tmp_path)
    probe = _run([sys.executable, "-c", PROBE], cwd=folder)  # cwd first on sys.path, as in a user's repo
    assert probe.returncode == 0 and "both import" in probe.stdout, probe.stderr
    cli = _run([sys.executable, "-m", "crossdyn.experiments", "run", "two-link-lagrange", "--short",
                "--out", str(tmp_path / "out")], cwd=folder)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "1/1 as expected" in cli.stdout


@pytest.mark.slow
def test_wheel_has_one_top_level_name_and_runs(tmp_path):
    wheels = tmp_path / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(wheels)], cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("crossdyn-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"crossdyn"}, sorted(top)
    assert "crossdyn/mjcf/wheel_legged_biped.xml" in names and "crossdyn/experiments/core/cli/__init__.py" in names
    # crossdyn.testing from experiments/testing/, once: not also as crossdyn.experiments.testing.
    assert "crossdyn/testing/plugin.py" in names
    assert "crossdyn/controllers/biped/firmware/biped.c" in names  # the biped's firmware, package data
    assert not any(n.startswith("crossdyn/experiments/testing") for n in names)

    # A fresh venv with the wheel; the dependencies come from this environment's
    # site-packages through a .pth line (which does not run the editable finder).
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    python = venv / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path)
    Path(site.stdout.strip(), "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    where = _run([str(python), "-c", "import crossdyn.experiments as e; print(e.__file__)"], cwd=tmp_path)
    assert str(venv) in where.stdout, f"crossdyn imported from {where.stdout} {where.stderr}"

    folder = _user_folder(tmp_path)
    probe = _run([str(python), "-c", PROBE], cwd=folder)
    assert probe.returncode == 0 and "both import" in probe.stdout, probe.stderr
    cli = _run([str(venv / "bin" / "crossdyn"), "run", "two-link-lagrange", "--short", "--out", str(tmp_path / "out")],
               cwd=folder)
    assert cli.returncode == 0 and "1/1 as expected" in cli.stdout, cli.stdout + cli.stderr
    _pytest_plugin_works(python, folder)


def _pytest_plugin_works(python: Path, folder: Path) -> None:
    """crossdyn.testing imports from the installed crossdyn, and pytest loads its plugin (entry point pytest11)."""
    where = _run([str(python), "-c", "import crossdyn.testing.plugin as p; print(p.__file__)"], cwd=folder)
    assert where.returncode == 0, where.stderr
    (folder / "tests").mkdir(exist_ok=True)
    (folder / "tests" / "test_user.py").write_text(
        "from crossdyn.testing import assert_derivation\n\n"
        "def test_plugin_on(pytestconfig):\n"
        "    import crossdyn.testing.plugin as p\n"
        "    assert pytestconfig.pluginmanager.get_plugin('crossdyn') is p\n"
        "    print('plugin from', p.__file__)\n")
    run = _run([str(python), "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests/test_user.py"], cwd=folder)
    assert run.returncode == 0 and f"plugin from {where.stdout.strip()}" in run.stdout, run.stdout + run.stderr


def test_pytest_plugin_from_the_editable_install(tmp_path):
    folder = _user_folder(tmp_path)
    _pytest_plugin_works(Path(sys.executable), folder)
    where = _run([sys.executable, "-c", "import crossdyn.testing as t; print(t.__file__)"], cwd=folder)
    assert where.stdout.strip() == str(ROOT / "experiments" / "testing" / "__init__.py"), where.stdout + where.stderr
