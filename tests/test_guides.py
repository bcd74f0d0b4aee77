"""The guides' longer examples run as printed and do what the text around them says.

``tests/test_docs.py`` runs every page's Python; the pages here are run by these
tests instead (once each), which also check the numbers and files the text
claims: the any-robot guide's cart-pole and reaction-wheel pendulum, the C
controllers guide's cart-pole in C, and the pytest guide's test file and commands in a user's own project.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from support import code_blocks, doc_section

ROOT = Path(__file__).resolve().parents[1]
# Pages whose examples these tests run (tests/test_docs.py leaves them out).
PAGES = ("guides/any-robot.md", "guides/c-controllers.md")


def _python(page: str) -> str:
    return "\n\n".join(code_blocks((ROOT / "docs" / page).read_text(), "python"))


def test_any_robot_guide_runs_and_its_numbers_hold(tmp_path):
    """Cart-pole: linearization, LQR, decay; imperfections; a robot of its own tuned within its motor."""
    done = subprocess.run([sys.executable, "-c", _python("guides/any-robot.md")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-3000:]
    names, poles, after, decay, exact, noisy, defaults, tuned = done.stdout.splitlines()
    assert names == "('cart', 'pole', 'cart_dot', 'pole_dot') ('push',)"
    assert poles == "open-loop poles: [-3.974  0.     0.     3.974]"
    measured, designed = (float(x) for x in re.findall(r"-\d\.\d+", decay))
    assert abs(measured - designed) < 0.01 * abs(designed)  # the page says -1.260 against -1.259
    for line in (exact, noisy):
        assert float(line.split()[-2]) < 5e-3, line  # both still balance (the page: 1.4e-03 and 1.8e-03 rad)
    assert "asking at most 1.96 N m" in defaults  # the defaults ask four times the motor's 0.5 N m ...
    asked = float(re.search(r"asking at most (\S+) N m", tuned).group(1))
    assert asked <= 0.5 and (tmp_path / "results" / "wheel" / "samples.csv").is_file()  # ... the tuned ones do not


def test_c_controllers_guide_runs_and_its_numbers_hold(tmp_path):
    """The guide's C file, its loop in double and float against the Python LQR, its experiment under --set."""
    page = (ROOT / "docs" / "guides" / "c-controllers.md").read_text()
    (tmp_path / "cart_pole_lqr.c").write_text(code_blocks(page, "c")[0])
    loop, experiment = code_blocks(page, "python")
    (tmp_path / "cart_pole_c.py").write_text(experiment)
    env = {**os.environ, "MPLBACKEND": "Agg", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", loop], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    double, single = (float(line.split()[-1]) for line in done.stdout.splitlines())
    assert double < 1e-12 and 1e-12 < single < 1e-6, done.stdout  # the page: about 1e-16 and 1e-8
    run, _ = (line.split()[1:] for line in code_blocks(page, "sh")[0].splitlines())
    for setting, code in ((run, 0), ([*run[:-1], "k_theta=49.5"], 1)):  # as printed, then the sign slip
        done = subprocess.run([sys.executable, "-m", "crossdyn.experiments", *setting, "--out", "out"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == code, done.stdout + done.stderr


def test_pytest_guide_example_runs(tmp_path):
    """The pytest guide's test file and commands, in a user's project, as printed.

    The project holds the guide's tests/test_arm.py and the regression guide's
    ci/experiments.py; each printed pytest command runs in a fresh interpreter
    from the project's folder: the missing baseline fails and says how to write
    it, --crossdyn-regen writes it, the rerun passes, and --crossdyn-from runs the
    pendulum experiment as a test.
    """
    section = doc_section("docs/guides/pytest.md", "A derivation and a baseline")
    test_file = code_blocks(section, "python")[0]
    commands = [line.split("#")[0].split() for line in code_blocks(section, "sh")[0].splitlines() if line.strip()]
    experiments = code_blocks(doc_section("docs/guides/regression-ci.md", "Your own experiments"), "python")[0]
    (tmp_path / "tests").mkdir()
    (tmp_path / "ci").mkdir()
    (tmp_path / "tests" / "test_arm.py").write_text(test_file)
    (tmp_path / "ci" / "experiments.py").write_text(experiments)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the project's own rootdir, not crossdyn's

    assert [c[0] for c in commands] == ["pytest"] * 4, commands
    runs = [subprocess.run([sys.executable, "-m", *command, "-p", "no:cacheprovider", "-rA"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
            for command in commands]
    first, regen, rerun, experiment = runs
    baseline = tmp_path / "tests" / "test_arm" / "test_swing_from_horizontal.json"
    assert first.returncode == 1, first.stdout + first.stderr
    assert "PASSED tests/test_arm.py::test_inverse_dynamics_matches_mujoco" in first.stdout
    assert "no crossdyn baseline tests/test_arm/test_swing_from_horizontal.json" in first.stdout
    assert "pytest --crossdyn-regen" in first.stdout
    assert regen.returncode == 0 and "wrote baseline tests/test_arm/test_swing_from_horizontal.json" in regen.stdout, \
        regen.stdout + regen.stderr
    assert set(json.loads(baseline.read_text())["metrics"]) == {"final_q[0]", "final_q[1]", "max_speed_rad_s",
                                                               "t_bottom_s", "over_the_top"}
    assert rerun.returncode == 0 and "2 passed" in rerun.stdout, rerun.stdout + rerun.stderr
    assert experiment.returncode == 0, experiment.stdout + experiment.stderr
    assert "PASSED ci/experiments.py::pendulum-pd" in experiment.stdout
    assert "1 passed, 2 deselected" in experiment.stdout
