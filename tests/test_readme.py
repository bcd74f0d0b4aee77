"""README is a front page that tells the truth: CI runs its test command, its examples run and print what
it shows, its commands parse, and its links lead somewhere."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from crossdyn.experiments.core.cli import build_parser, main
from crossdyn.experiments.core.registry import experiments
from support import code_blocks

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
MAX_LINES = 300  # a front page: what crossdyn is, the two commands, three examples, links into the docs


def _setup_commands(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("python3 -m venv")]


def test_ci_runs_the_readme_test_command():
    readme = _setup_commands(README)
    ci = _setup_commands((ROOT / ".ci" / "run").read_text())
    assert len(readme) >= 2, "README must open with the set-up+run and set-up+test commands"
    assert "crossdyn run" in readme[0] and "pytest" in readme[1]
    assert ci == [readme[1]]
    # ... and they are the first two commands a reader meets.
    assert [b.strip() for b in code_blocks(README, "sh")[:2]] == readme[:2]


def test_readme_is_a_front_page():
    assert len(README.splitlines()) <= MAX_LINES
    for heading in ("## Check a derivation", "## Close a loop on any robot", "## Tune", "## Documentation"):
        assert heading in README, heading


def test_readme_links_lead_to_pages():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert len(local) >= 15, local  # the guides and derivations are linked
    missing = [link for link in local if not (ROOT / link).is_file()]
    assert not missing, missing


def _run(code: str, cwd: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_check_example_prints_what_readme_shows(tmp_path):
    """Each python block runs alone (as a reader pastes it); the check example prints README's output block."""
    section = README.split("## Check a derivation", 1)[1].split("\n## ", 1)[0]
    check = code_blocks(section, "python")[0]
    shown = code_blocks(section, "")[1].splitlines()  # the block after the command's output
    assert _run(check, tmp_path) == shown


def test_loop_example_balances_under_noise_and_delay(tmp_path):
    loop = code_blocks(README.split("## Close a loop on any robot", 1)[1], "python")[0]
    poles, result = _run(loop, tmp_path)
    assert poles == "open-loop poles: [-3.97  0.    0.    3.97]"
    angle, force = (float(x) for x in re.fullmatch(r"pole at (\S+) rad after 6 s, at most (\S+) N asked",
                                                       result).groups())
    assert angle < 1e-2 and force <= 20.0  # balanced, within the motor's +-20 N


def _wheel_block(text: str) -> str:
    blocks = [b for b in code_blocks(text, "python") if "wheel-pendulum-lqr" in b]
    assert len(blocks) == 1
    return blocks[0]


def test_tune_example_is_the_guides_which_runs_there():
    """The robot-nobody-shipped example is the any-robot guide's, verbatim, and short.

    tests/test_guides.py runs the guide's copy (24 search trials: once in the
    suite is enough) and checks the numbers both pages state: the defaults ask
    1.96 N m of a 0.5 N m motor, the tuned weights stay within it.
    """
    block = _wheel_block(README.split("## Tune", 1)[1].split("\n## ", 1)[0])
    assert block == _wheel_block((ROOT / "docs" / "guides" / "any-robot.md").read_text())
    assert len(block.strip().splitlines()) < 40  # from an MJCF string to tuned gains in under 40 lines
    section = README.split("## Tune", 1)[1].split("\n## ", 1)[0]
    assert "1.96 N m" in section and "0.50 N m" in section


def test_every_python_block_is_tested():
    """A new python block in README needs a test above: the check, the loop and the tune examples."""
    assert len(code_blocks(README, "python")) == 3


def test_two_link_output_is_what_the_command_prints(tmp_path, capsys):
    section = README.split("## Check a derivation", 1)[1]
    shown = code_blocks(section, "")[0].splitlines()
    assert main(["check", "two-link", "--variant", "lecture-no-link-inertia", "--out", str(tmp_path)]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[:len(shown)] == shown


def _commands() -> list[list[str]]:
    words = []
    for block in code_blocks(README, "sh"):
        for line in block.replace("\\\n", " ").splitlines():
            parts = shlex.split(line, comments=True)
            if parts and parts[0] == "crossdyn":
                words.append(parts[1:])
    return words


def test_readme_commands_parse_and_name_registered_experiments():
    commands = _commands()
    assert len(commands) >= 6
    registered = experiments()
    parser = build_parser()
    for words in commands:
        try:
            args = parser.parse_args(words)
        except SystemExit:
            pytest.fail(f"crossdyn {shlex.join(words)}: refused by the parser")
        names = [*getattr(args, "names", [])] if not getattr(args, "sources", None) else []
        assert not [n for n in names if n not in registered], words
