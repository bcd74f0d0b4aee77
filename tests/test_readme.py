"""README and CI agree, and the README's Python and pytest examples run as printed."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("python3 -m venv")]


def test_ci_runs_the_readme_test_command():
    readme = _commands((ROOT / "README.md").read_text())
    ci = _commands((ROOT / ".ci" / "run").read_text())
    assert len(readme) >= 2, "README must open with the set-up+run and set-up+test commands"
    assert "crossdyn run" in readme[0] and "pytest" in readme[1]
    assert ci == [readme[1]]


def _python_example() -> str:
    section = (ROOT / "README.md").read_text().split("## Use it from Python", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "README's 'Use it from Python' section has no python block"
    return blocks[0]


def test_readme_python_example_runs(tmp_path):
    """Run the example in a fresh interpreter, in an empty folder, exactly as printed."""
    out = subprocess.run([sys.executable, "-c", _python_example()], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("True agree"), lines  # the closed form agrees with mj_inverse
    assert re.match(r"settled in \d\.\d\d s", lines[1]), lines
    assert lines[2].startswith("two-link-lagrange True"), lines
    assert (tmp_path / "balance.png").stat().st_size > 10_000
    assert (tmp_path / "results" / "two-link-lagrange" / "metrics.json").is_file()


def test_readme_any_robot_example_runs(tmp_path):
    """From an MJCF string to a tuned LQR in under 40 lines: the tuned design never asks the motor for more."""
    section = (ROOT / "README.md").read_text().split("## Any robot, any controller", 1)[1]
    example = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    assert len(example.splitlines()) <= 40
    out = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    defaults, tuned = out.stdout.splitlines()
    assert defaults.startswith("defaults: q_tilt=10, r=1:") and tuned.startswith("tuned:")
    asked = float(re.search(r"asking at most (\S+) N m", tuned).group(1))
    assert asked <= 0.5 and (tmp_path / "results" / "wheel" / "samples.csv").is_file()


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text().split(f"### {title}", 1)[1]
    return text.split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_readme_pytest_example_runs(tmp_path):
    """'In your pytest suite': the test file and the commands, in a user's project, as printed.

    The project holds README's tests/test_arm.py and its ci/experiments.py (the
    'Your own experiments' example); each printed pytest command runs in a fresh
    interpreter from the project's folder: the missing baseline fails and says how
    to write it, --crossdyn-regen writes it, the rerun passes, and --crossdyn-from
    runs the pendulum experiment as a test.
    """
    section = _section("In your pytest suite")
    test_file = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    commands = [line.split("#")[0].split() for line in re.findall(r"```sh\n(.*?)```", section, flags=re.S)[0]
                .splitlines() if line.strip()]
    experiments = re.search(r"```python\n(.*?)```", _section("Your own experiments"), flags=re.S).group(1)
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
