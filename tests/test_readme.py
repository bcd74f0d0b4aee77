"""README and CI agree: .ci/run runs the test command the README gives."""

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
