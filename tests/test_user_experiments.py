"""A user's own experiments: listed, run, saved as a baseline, compared, reported in JUnit.

The experiment file is the regression guide's example (``ci/experiments.py``), written to a
temporary folder outside crossdyn's packages and run through the command line in
fresh interpreters, as a user's CI would.  An installed package's entry point is
checked with a minimal distribution on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from support import code_blocks, doc_section

ROOT = Path(__file__).resolve().parents[1]
SETTLE_LINE = '"settle_s": settle,'  # where the tests change the example's settling time


def readme_example() -> str:
    """The python block of the regression guide's 'Your own experiments' section."""
    [block] = code_blocks(doc_section("docs/guides/regression-ci.md", "Your own experiments"), "python")
    return block


def crossdyn(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``crossdyn ARGS`` in a fresh interpreter, from ``cwd``."""
    return subprocess.run([sys.executable, "-m", "crossdyn.experiments", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "MPLBACKEND": "Agg", **(env or {})})


@pytest.fixture
def user_repo(tmp_path) -> Path:
    """A user's repository holding the guide's example as ci/experiments.py."""
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "experiments.py").write_text(readme_example())
    return tmp_path


def _scale_settle(repo: Path, factor: float) -> None:
    """The code change under test: the example reports its settling time times ``factor``."""
    path = repo / "ci" / "experiments.py"
    text = path.read_text()
    assert SETTLE_LINE in text, "the guide's example no longer reports settle_s as the tests expect"
    path.write_text(text.replace(SETTLE_LINE, f'"settle_s": {factor!r} * settle,'))


def test_listed_with_its_parameters(user_repo):
    out = crossdyn("list", "--from", "ci/experiments.py", cwd=user_repo)
    assert out.returncode == 0, out.stderr
    assert "pendulum-pd" in out.stdout and "--set target_deg=30.0" in out.stdout
    assert "two-link-lagrange" in out.stdout  # the built-in ones are still there
    assert "expected: within 1 deg of 30 deg in 1 s" in out.stdout


def test_baseline_round_trip_and_a_five_percent_drift(user_repo):
    """Saved, reproduced exactly, then a 5 % change in one metric fails, named, in text and JUnit."""
    common = ["run", "pendulum-pd", "--from", "ci/experiments.py", "--short"]
    saved = crossdyn(*common, "--out", "a", "--save-baseline", "ci/baseline", cwd=user_repo)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    record = json.loads((user_repo / "ci" / "baseline" / "pendulum-pd.json").read_text())
    run_a = json.loads((user_repo / "a" / "pendulum-pd" / "metrics.json").read_text())
    assert record["metrics"]["settle_s"] == run_a["settle_s"] and record["short"] is True
    assert (user_repo / "a" / "pendulum-pd" / "angle.png").stat().st_size > 5_000

    same = crossdyn(*common, "--out", "b", "--baseline", "ci/baseline", "--junit", "b/junit.xml", cwd=user_repo)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "0 of 1 experiments drifted" in same.stdout
    run_b = json.loads((user_repo / "b" / "pendulum-pd" / "metrics.json").read_text())
    assert run_b == run_a  # deterministic: the baseline is reproduced exactly, not within tolerance
    suite = ET.parse(user_repo / "b" / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"

    _scale_settle(user_repo, 1.05)
    moved = crossdyn(*common, "--out", "c", "--baseline", "ci/baseline", "--junit", "c/junit.xml", cwd=user_repo)
    assert moved.returncode == 1, moved.stdout + moved.stderr  # drift fails the run ...
    assert "1/1 as expected" in moved.stdout  # ... though the experiment's own expectation passes
    drift_lines = [line for line in moved.stdout.splitlines() if "drifted " in line and "pendulum-pd:" in line]
    assert len(drift_lines) == 1 and "settle_s" in drift_lines[0] and "change +5 %" in drift_lines[0], moved.stdout
    case = ET.parse(user_repo / "c" / "junit.xml").getroot().find("testsuite/testcase")
    failure = case.find("failure")
    assert case.get("name") == "pendulum-pd" and failure is not None and failure.get("type") == "baseline"
    assert "settle_s" in failure.text and "+5 %" in failure.text


def test_declared_tolerance_lets_a_small_change_pass(user_repo):
    """settle_s declares +-2 %: a 1 % change passes, where the default tolerance (1e-6) would fail."""
    from crossdyn.experiments.core.baseline import DEFAULT_TOLERANCE

    assert not DEFAULT_TOLERANCE.allows(1.0, 1.01)
    common = ["run", "pendulum-pd", "--from", "ci/experiments.py", "--short"]
    assert crossdyn(*common, "--out", "a", "--save-baseline", "base", cwd=user_repo).returncode == 0
    _scale_settle(user_repo, 1.01)
    out = crossdyn(*common, "--out", "b", "--baseline", "base", cwd=user_repo)
    assert out.returncode == 0 and "0 of 1 experiments drifted" in out.stdout, out.stdout + out.stderr


def test_set_seed_and_workers_reach_a_user_experiment(user_repo):
    """--set reaches ctx.params and the expected text; with --workers the worker processes load --from too."""
    out = crossdyn("run", "pendulum-pd", "two-link-lagrange", "--from", "ci/experiments.py", "--short",
                   "--set", "target_deg=45", "--workers", "2", "--out", "w", cwd=user_repo)
    assert out.returncode == 0, out.stdout + out.stderr
    metrics = json.loads((user_repo / "w" / "pendulum-pd" / "metrics.json").read_text())
    assert metrics["params"]["target_deg"] == 45.0 and metrics["expected"] == "within 1 deg of 45 deg in 1 s"
    assert [row["name"] for row in json.loads((user_repo / "w" / "summary.json").read_text())] == [
        "pendulum-pd", "two-link-lagrange"]


def test_entry_point_of_an_installed_package(tmp_path):
    """A distribution declaring group 'crossdyn.experiments' is loaded without --from."""
    site = tmp_path / "site"
    (site / "robot_pkg").mkdir(parents=True)
    (site / "robot_pkg" / "__init__.py").write_text("")
    (site / "robot_pkg" / "checks.py").write_text(
        "from crossdyn import experiment\n\n"
        "@experiment('robot-pkg-check', summary='from an entry point', expected='always')\n"
        "def check(ctx):\n    return {'passed': True, 'measured': 'ok', 'value': 1.5}\n")
    dist = site / "robot_pkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: robot-pkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[crossdyn.experiments]\nrobot = robot_pkg.checks\n")
    env = {"PYTHONPATH": str(site)}
    listed = crossdyn("list", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "robot-pkg-check" in listed.stdout, listed.stderr
    ran = crossdyn("run", "robot-pkg-check", "--out", "out", cwd=tmp_path, env=env)
    assert ran.returncode == 0 and "1/1 as expected" in ran.stdout, ran.stdout + ran.stderr
    assert not crossdyn("list", cwd=tmp_path).stdout.count("robot-pkg-check")  # absent without the package


def test_a_module_name_and_a_neighbour_import(tmp_path):
    """--from takes a module name; a file may import a module beside it."""
    (tmp_path / "helpers.py").write_text("VALUE = 2.5\n")
    (tmp_path / "mine.py").write_text(
        "from helpers import VALUE\nfrom crossdyn import experiment\n\n"
        "@experiment('mine-check', summary='imports a neighbour', expected='value 2.5')\n"
        "def check(ctx):\n    return {'passed': VALUE == 2.5, 'measured': f'value {VALUE}', 'value': VALUE}\n")
    elsewhere = tmp_path / "elsewhere"  # the file's folder is not the working folder
    elsewhere.mkdir()
    by_file = crossdyn("run", "mine-check", "--from", str(tmp_path / "mine.py"), "--out", "o1", cwd=elsewhere)
    assert by_file.returncode == 0, by_file.stderr
    by_module = crossdyn("run", "mine-check", "--from", "mine", "--out", str(tmp_path / "o2"), cwd=tmp_path,
                         env={"PYTHONPATH": str(tmp_path)})
    assert by_module.returncode == 0, by_module.stderr
