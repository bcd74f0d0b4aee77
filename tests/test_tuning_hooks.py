"""An experiment with a tune of its own: the generic tune runs its plan into its table and hands it its summary."""

from __future__ import annotations

import csv
import json
import textwrap

import pytest

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.registry import experiments, tunings
from crossdyn.experiments.core.sweep.experiment import tune

# A tuning of squares: each job squares its x; the summary keeps the smallest square.
USER_FILE = textwrap.dedent('''
    import json
    from dataclasses import dataclass

    from crossdyn import experiment
    from crossdyn.experiments.core.sweep.run import Batch
    from crossdyn.experiments.core.sweep.tuning import Tuning


    @dataclass(frozen=True)
    class Cell:
        index: int
        x: float

        def key(self):
            return {"sample": str(self.index), "x": repr(self.x)}


    def evaluate(job):
        if isinstance(job, Batch):
            return [evaluate(one) for one in job.jobs]
        return {**job.key(), "square": repr(job.x ** 2), "outcome": "ok" if job.x < 2 else "big", "detail": ""}


    def summary(out, result, *, note):
        result.summary = {"note": note, "smallest": min(float(r["square"]) for r in result.rows)}
        (out / "squares.json").write_text(json.dumps(result.summary))


    def configure(parser):
        parser.set_defaults(func=lambda args: 0)


    @experiment("squares-tuning", summary="squares tuned", expected="a square",
                tuning=Tuning("squares", configure, "squares.csv", ("sample", "x", "square", "outcome", "detail"),
                              evaluate, lambda row: row["outcome"] != "ok", summary))
    def one(ctx):
        return {"passed": True, "measured": "1"}
''')


@pytest.fixture(scope="module")
def tuning_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tuning") / "my_tunings.py"
    path.write_text(USER_FILE)
    return (str(path),)


def _plan(sources, values):
    """The tuning's jobs, built from the user's module as the experiment's own planning would."""
    cell = tunings(sources)["squares-tuning"].tuning.evaluate.__globals__["Cell"]
    return [cell(i, x) for i, x in enumerate(values)]


def test_a_tuning_runs_its_plan_into_its_own_table_and_summary(tuning_file, tmp_path):
    plan = _plan(tuning_file, [3.0, 1.5, -1.0])
    result = tune("squares-tuning", tmp_path, plan=plan, options={"note": "n"}, sources=tuning_file)
    with open(tmp_path / "squares.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["sample", "x", "square", "outcome", "detail"]  # the experiment's columns, in its order
    assert [r[2] for r in rows[1:]] == ["9.0", "2.25", "1.0"]
    assert result.computed == 3 and result.counts() == {"big": 1, "ok": 2}
    assert json.loads((tmp_path / "squares.json").read_text()) == {"note": "n", "smallest": 1.0}
    again = tune("squares-tuning", tmp_path, plan=plan, options={"note": "m"}, sources=tuning_file)
    assert (again.computed, again.resumed, again.summary) == (0, 3, {"note": "m", "smallest": 1.0})
    with pytest.raises(ParameterError):  # the table holds other x: refused, not mixed
        tune("squares-tuning", tmp_path, plan=_plan(tuning_file, [5.0]), options={"note": "n"}, sources=tuning_file)


def test_a_search_plan_runs_on_the_engine_it_is_given(tuning_file, tmp_path):
    seen = {}

    def search(engine, csv_path, progress):
        seen["csv"] = csv_path
        rows = [row for row, _, _ in engine.run(_plan(tuning_file, [0.5, 4.0]))]
        return rows, len(rows)

    result = tune("squares-tuning", tmp_path, plan=search, options={"note": "s"}, sources=tuning_file)
    assert seen["csv"] == tmp_path / "squares.csv"
    assert [r["square"] for r in result.rows] == ["0.25", "16.0"] and result.summary["smallest"] == 0.25


def test_a_tuning_is_no_experiment_of_the_run_set_and_takes_no_generic_tune(tuning_file, tmp_path, capsys):
    assert "squares-tuning" in tunings(tuning_file) and "squares-tuning" not in experiments(tuning_file)
    with pytest.raises(ParameterError, match="tuned with options of its own: 'crossdyn tune squares --help'"):
        tune("squares-tuning", tmp_path, vary=["x=1:2"], sources=tuning_file)
    with pytest.raises(ParameterError, match="declares no tuning of its own"):
        tune("two-link-lagrange", tmp_path, plan=[], sources=tuning_file)
    assert main(["tune", "biped-balance-tune", "--vary", "q_x=1:2"]) == 2  # the biped's: its command is 'balance'
    assert "'crossdyn tune balance --help'" in capsys.readouterr().err
    assert not (tmp_path / "squares.csv").exists()


def test_the_biped_tunings_one_run_is_the_row_a_sweep_records(tmp_path):
    from crossdyn.experiments.biped import tune as biped
    from crossdyn.experiments.core.runner import Context

    exp = tunings()[biped.BALANCE]
    defaults = {k: p.default for k, p in exp.params.items()}

    def one(**values):
        return exp.run(Context(exp.name, tmp_path, seed=0, params={**defaults, "duration_s": 1.0, **values},
                               plots=False))

    row = biped.evaluate(biped.Sample(0, "default", dict(biped.DEFAULT_WEIGHTS), dict(biped.NOMINAL), 1.0))
    metrics = one()
    assert metrics["outcome"] == row["outcome"] and metrics["passed"] == (row["outcome"] == "ok")
    assert metrics["effort_N2m2s"] == float(row["effort_N2m2s"])  # the same run, the same bits
    assert one(r=10.0)["effort_N2m2s"] != metrics["effort_N2m2s"]  # the weights are the run's own
