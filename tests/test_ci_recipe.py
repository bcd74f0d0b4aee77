"""The regression guide's GitHub Actions recipe parses, and its commands are the ones that work here.

The test lays out the user's repository the recipe assumes (the guide's example as
``ci/experiments.py``, a baseline made with the guide's ``--save-baseline``
command), then runs the workflow's crossdyn step verbatim, from that folder:
it must pass, write the JUnit file the report step reads, and fill the folder
the upload step keeps.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from support import code_blocks, doc_section
from test_user_experiments import readme_example

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    return doc_section("docs/guides/regression-ci.md", "A CI recipe")


def _workflow() -> dict:
    blocks = code_blocks(_section(), "yaml")
    assert len(blocks) == 1, "the CI recipe should hold one YAML workflow"
    return yaml.safe_load(blocks[0])


def _steps() -> list[dict]:
    [job] = _workflow()["jobs"].values()
    return job["steps"]


def _step(uses: str) -> dict:
    [step] = [s for s in _steps() if s.get("uses", "").startswith(uses)]
    return step


def _run_command() -> str:
    [command] = [s["run"].strip() for s in _steps() if "crossdyn run" in s.get("run", "")]
    return command


def _option(command: str, name: str) -> str:
    words = shlex.split(command)
    return words[words.index(name) + 1]


def test_workflow_parses_and_hangs_together():
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers and workflow["env"]["MPLBACKEND"] == "Agg"
    install = [s["run"] for s in _steps() if "pip install" in s.get("run", "")]
    assert install == ['python -m pip install "$CROSSDYN"'] and "crossdyn" in workflow["env"]["CROSSDYN"]
    command = _run_command()
    assert command.startswith("crossdyn run ") and "--baseline" in command and "--junit" in command
    out, junit = _option(command, "--out"), _option(command, "--junit")
    assert _step("actions/upload-artifact")["with"]["path"].rstrip("/") == out
    assert _step("mikepenz/action-junit-report")["with"]["report_paths"] == junit
    assert _step("actions/upload-artifact")["if"] == "always()"  # keep the report of a failing run too


def test_workflow_commands_run_here(tmp_path):
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "experiments.py").write_text(readme_example())
    guide = (ROOT / "docs" / "guides" / "regression-ci.md").read_text()
    [make_baseline] = [line.split("#")[0].strip() for line in guide.splitlines()
                       if line.startswith("crossdyn run") and "--save-baseline" in line]
    command = _run_command()
    assert _option(make_baseline, "--save-baseline") == _option(command, "--baseline")
    env = {**os.environ, **_workflow()["env"]}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # this environment's crossdyn
    for line in (make_baseline, command):
        done = subprocess.run(line, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    assert "0 of 1 experiments drifted" in done.stdout
    suite = ET.parse(tmp_path / _option(command, "--junit")).getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert (tmp_path / _option(command, "--out") / "index.html").is_file()
