"""Every registered experiment, in short mode, meets its expected outcome.

This is the regression gate: an experiment added later is picked up here with no
change to this file.  The items come from crossdyn's own pytest plugin
(``experiment_tests`` below: ``tests/test_experiments.py::experiments_in_short_mode::NAME``,
``-k NAME`` selects one), which runs each experiment while setting it up (a
crash or a malformed return is an error), fails it on a missed expectation, then
calls :func:`_outputs` for what crossdyn asks of its own experiments.
"""

from __future__ import annotations

import json

import pytest

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.registry import experiments, get
from crossdyn.experiments.core.runner import run_experiments
from crossdyn.testing import experiment_tests

REGISTRY = experiments()


def _outputs(name, metrics, out_dir):
    """Beyond the verdict: the metrics name their experiment, a cross-check reports each term, a plot is written."""
    assert metrics["experiment"] == name and metrics["measured"]
    if "terms" in metrics:  # a cross-check reports each term
        assert set(metrics["terms"]) == {"mass_matrix", "velocity", "gravity"}
        assert "max_abs_error" in metrics
    assert list(out_dir.glob("*.png")), f"{name} wrote no plot"


# One test item per experiment defined in crossdyn's own modules (its systems register them through
# the crossdyn.experiments entry point; an experiment belongs to the module its function is defined in).
experiments_in_short_mode = experiment_tests("crossdyn.experiments", check=_outputs)


def test_every_registered_experiment_is_an_item(request):
    """The plugin is on and makes one item per registered experiment (off, the gate above would be empty)."""
    assert request.config.pluginmanager.has_plugin("crossdyn"), "crossdyn's pytest plugin is not loaded"
    module = request.node.getparent(pytest.Module)
    sources = [node for node in module.collect() if node.name == "experiments_in_short_mode"]
    assert len(sources) == 1 and isinstance(sources[0], pytest.Collector), sources
    assert [item.name for item in sources[0].collect()] == list(REGISTRY)


def test_same_seed_same_metrics(tmp_path):
    exp = get("two-link-lagrange")
    for run in ("a", "b"):
        run_experiments([exp], tmp_path / run, short=True, seed=11)
    a, b = ((tmp_path / run / exp.name / "metrics.json").read_text() for run in ("a", "b"))
    assert a == b


def test_run_cli_summary_and_exit_status(tmp_path, capsys):
    names = ["two-link-lagrange", "two-link-lecture-no-link-inertia"]
    assert main(["run", *names, "--short", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "experiment" in out and "expected" in out and "2/2 as expected" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [row["name"] for row in summary] == ["two-link-lagrange", "two-link-lecture-no-link-inertia"]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "no-such-experiment"], "no experiment 'no-such-experiment'"),
        (["run", "two-link-lagrange", "--set", "nope=1"], "nope"),
        (["run", "two-link-lagrange", "--set", "samples=-3"], "out of range"),
        (["run", "two-link-lagrange", "--set", "samples=abc"], "expected a int"),
    ],
)
def test_run_bad_input(tmp_path, capsys, argv, message):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_a_crashing_experiment_loses_nothing(tmp_path, monkeypatch):
    """A crash is recorded with its traceback; the experiments after it still run."""
    from crossdyn.experiments.core.registry import Experiment

    def boom(ctx):
        raise RuntimeError("simulated failure")

    crash = Experiment("crash", "crashes", "nothing", boom)
    outcomes = run_experiments([crash, get("two-link-lagrange")], tmp_path, short=True)
    assert [o.passed for o in outcomes] == [False, True]
    assert "simulated failure" in (tmp_path / "crash" / "error.txt").read_text()
    assert json.loads((tmp_path / "crash" / "metrics.json").read_text())["passed"] is False
    assert (tmp_path / "two-link-lagrange" / "metrics.json").exists()
