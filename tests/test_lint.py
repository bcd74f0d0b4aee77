"""The linter and the type checker pass on the whole repository, as configured in pyproject.toml.

- ``ruff check .`` from the repository root exits 0.
- ``mypy`` from the repository root exits 0.  mypy reads the layers through a tree
  with the installed layout, ``build/typecheck/crossdyn/`` (the comment above
  ``[tool.mypy]`` in pyproject.toml); the test makes those directory links itself,
  idempotently, as ``ln -sfn`` would.

Both tools come with the ``test`` extra; each test skips, saying so, only when its
tool is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# build/typecheck/crossdyn/NAME -> the repository folder it stands for, relative to the link's folder
# (pyproject.toml's package-dir mapping: crossdyn.testing's source is experiments/testing/).
TYPECHECK = ROOT / "build" / "typecheck" / "crossdyn"
LINKS = {name: f"../../../{name}" for name in ("analytic", "controllers", "experiments", "mjcf")}
LINKS["testing"] = "../../../experiments/testing"
# The front door, crossdyn/__init__.py, is a file of the MuJoCo layer's folder (a file link).
LINKS["__init__.py"] = "../../../experiments/api/__init__.py"


def _tool(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (it comes with crossdyn's test extra: pip install -e '.[test]')")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def make_typecheck_links() -> None:
    """The links mypy reads the layers through; an existing right link is kept, a stale one replaced."""
    TYPECHECK.mkdir(parents=True, exist_ok=True)
    for name, target in LINKS.items():
        link = TYPECHECK / name
        if link.is_symlink() and os.readlink(link) == target:
            continue
        # Made beside the link and renamed over it in one step: another process making the same
        # link at the same time (a second test run, mypy by hand) never sees it missing.
        tmp = TYPECHECK / f".{name}.{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target, target_is_directory=not name.endswith(".py"))
        os.replace(tmp, link)
        assert link.is_file() or (link / "__init__.py").is_file(), f"{link} -> {target} does not reach a package"


def test_ruff_check_is_clean():
    _tool("ruff")
    done = _run("ruff", "check", ".")
    assert done.returncode == 0, f"ruff check . (exit {done.returncode}):\n{done.stdout}{done.stderr}"


def test_mypy_is_clean():
    _tool("mypy")
    make_typecheck_links()
    done = _run("mypy")
    # Its notes on annotations inside unannotated functions are left out of the message: the errors are the news.
    said = "".join(line for line in (done.stdout + done.stderr).splitlines(keepends=True)
                   if not line.rstrip().endswith("[annotation-unchecked]"))
    assert done.returncode == 0, f"mypy (exit {done.returncode}):\n{said}"
    assert "Success: no issues found" in done.stdout, done.stdout
