"""README and CI agree, and the README's Python example runs as printed."""

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
