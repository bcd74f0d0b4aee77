"""Every command README.md and the guides show runs as pasted into bash.

Each line of their ``sh`` blocks (backslash continuations joined) goes through
``bash -u -O failglob -c LINE`` in a scratch folder whose PATH starts with
stand-ins for ``crossdyn``, ``pytest``, ``python``, ``pip`` and ``dask`` (and
``.venv/bin/*``) that only write down the words they were given.  Those words
must be the ones the page means, as Python's ``shlex`` reads the line (it knows
quotes and comments, not redirections, globs or variables): an unquoted
``METRIC<=20`` is a redirection in bash, an unquoted ``joint:*:damping`` a glob,
and either fails here.  This is the check for every command, the expensive ones
included (a tune of 32 Optuna trials, an identification): bash parses them,
nothing runs.

The cheap commands (:data:`RUN`) then run for real through the same shell, with
the one placeholder they need filled (the regression guide's
``ci/experiments.py``), and must end with the exit status the page implies.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from support import code_blocks, doc_section

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]
SHELLS = ("sh", "bash", "shell")
# The programs the pages call; each is stood in for by a recorder when commands are only parsed.
PROGRAMS = ("crossdyn", "pytest", "python", "python3", "pip", "dask")
# Words that end one command and start the next, as shlex leaves them.
SEPARATORS = ("&&", "||", ";", "|")

# Commands that run for real (seconds each), with the exit status the page implies: the closed
# form passes, the printed form without link inertia is the README's mismatch, the user's file lists.
RUN = {
    "crossdyn check two-link --variant lagrange": 0,
    "crossdyn check two-link --variant lecture-no-link-inertia": 1,
    "crossdyn list --from ci/experiments.py": 0,
}

RECORDER = """\
#!{python}
import json, os, sys
with open(os.environ["PASTED_ARGV_LOG"], "a") as log:
    log.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


def _lines(text: str) -> list[str]:
    """The command lines of a page's shell blocks, continuations joined, comment-only lines left out."""
    out = []
    for language in SHELLS:
        for block in code_blocks(text, language):
            for line in block.replace("\\\n", " ").splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    out.append(line.strip())
    return out


def _commands() -> list[tuple[str, str]]:
    return [(page.relative_to(ROOT).as_posix(), line) for page in PAGES for line in _lines(page.read_text())]


def _meant(line: str) -> list[list[str]]:
    """The programs and their words as the page means them: shlex's reading, split at ``&&`` and the like."""
    words = shlex.split(line, comments=True)
    commands: list[list[str]] = [[]]
    for word in words:
        if word in SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(word)
    return [[os.path.basename(c[0]), *c[1:]] for c in commands if c]


@pytest.fixture(scope="module")
def recorders(tmp_path_factory) -> Path:
    """A folder of recording stand-ins for every program the pages call."""
    folder = tmp_path_factory.mktemp("bin")
    for name in PROGRAMS:
        (folder / name).write_text(RECORDER.format(python=sys.executable))
        (folder / name).chmod(0o755)
    return folder


def _bash(line: str, cwd: Path, path: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-u", "-O", "failglob", "-c", line], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PATH": path, **env})


def test_the_pages_have_commands_and_the_check_can_fail(recorders, tmp_path):
    """The pages show commands of every kind; a redirection or a glob left unquoted is caught."""
    commands = _commands()
    assert len(commands) >= 60 and {page for page, _ in commands} >= {"README.md", "docs/guides/tune.md"}
    log = tmp_path / "argv.jsonl"
    path = f"{recorders}{os.pathsep}{os.environ['PATH']}"
    for bad in ("crossdyn tune x --constraint max_force_N<=20", "crossdyn identify --fit joint:*:damping"):
        done = _bash(bad, tmp_path, path, PASTED_ARGV_LOG=str(log))
        recorded = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
        assert done.returncode != 0 or recorded != _meant(bad), (bad, done.stderr)  # bash reads them otherwise
        log.unlink(missing_ok=True)


def test_every_command_reaches_its_program_as_the_page_means_it(recorders, tmp_path):
    """bash hands each program the words the page shows: nothing redirected, globbed or expanded."""
    venv = tmp_path / ".venv" / "bin"  # the README's set-up runs .venv/bin/pip, .venv/bin/python ...
    venv.mkdir(parents=True)
    for name in ("pip", "python", "crossdyn"):
        (venv / name).write_text(RECORDER.format(python=sys.executable))
        (venv / name).chmod(0o755)
    path = f"{recorders}{os.pathsep}{os.environ['PATH']}"
    wrong = []
    for page, line in _commands():
        log = tmp_path / "argv.jsonl"
        log.unlink(missing_ok=True)
        done = _bash(line, tmp_path, path, PASTED_ARGV_LOG=str(log))
        recorded = [json.loads(entry) for entry in log.read_text().splitlines()] if log.is_file() else []
        if done.returncode != 0 or done.stderr or recorded != _meant(line):
            wrong.append(f"{page}: {line}\n    bash: {done.stderr.strip() or done.returncode}; got {recorded}")
    assert not wrong, "commands that do not paste into bash:\n" + "\n".join(wrong)


def test_the_cheap_commands_run_as_pasted(tmp_path):
    """The commands of :data:`RUN` run for real in bash and exit as the page implies."""
    shown = {line.split(" #")[0].strip() for _, line in _commands()}
    assert set(RUN) <= shown, set(RUN) - shown  # each is still on a page: this test checks what a reader pastes
    experiments = code_blocks(doc_section("docs/guides/regression-ci.md", "Your own experiments"), "python")[0]
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "experiments.py").write_text(experiments)
    real = tmp_path / "bin"
    real.mkdir()
    (real / "crossdyn").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m crossdyn.experiments "$@"\n')
    (real / "crossdyn").chmod(0o755)
    path = f"{real}{os.pathsep}{os.environ['PATH']}"
    for line, status in RUN.items():
        done = _bash(line, tmp_path, path, MPLBACKEND="Agg")
        assert done.returncode == status and "Traceback" not in done.stderr, (line, done.stdout[-2000:],
                                                                              done.stderr[-2000:])
