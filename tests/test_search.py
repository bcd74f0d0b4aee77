"""crossdyn tune balance --search optuna: deterministic, resumable, on the local pool and on Dask.

Tiny searches (3 trials of 1 s runs, which do not settle: the objectives still
order them) keep the file fast; the 64-trial comparison with the Latin
hypercube is benchmarks/search_vs_lhs.py.
"""

from __future__ import annotations

import csv

import pytest

from crossdyn.experiments.biped import tune
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError

SEARCH = dict(trials=3, seed=4, duration=1.0, plots_=False)


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    result = tune.search(out, workers=1, **SEARCH)
    return out / "samples.csv", result


def test_every_trial_is_a_row_and_trial_0_is_the_defaults(serial):
    path, result = serial
    rows = _rows(path)
    assert [r["sample"] for r in rows] == ["0", "1", "2", "3"] and result.computed == 4
    assert rows[0]["kind"] == "default" and [float(rows[0][w]) for w in tune.WEIGHTS] == [20.0, 10.0, 100.0, 1.0, 1.0]
    assert {r["kind"] for r in rows[1:]} == {"optuna"} and all(r["outcome"] for r in rows)
    for r in rows[1:]:  # drawn within the ranges
        assert all(tune.RANGES[w][0] <= float(r[w]) <= tune.RANGES[w][1] for w in tune.WEIGHTS)


def test_serial_search_is_deterministic_for_a_seed(serial, tmp_path):
    path, _ = serial
    tune.search(tmp_path / "again", workers=1, **SEARCH)
    assert (tmp_path / "again" / "samples.csv").read_bytes() == path.read_bytes()
    tune.search(tmp_path / "other", workers=1, **{**SEARCH, "seed": 5})
    assert [r["q_x"] for r in _rows(tmp_path / "other" / "samples.csv")[1:]] != [r["q_x"] for r in _rows(path)[1:]]


def test_resume_runs_only_the_missing_trials(serial, tmp_path):
    path, _ = serial
    lines = path.read_text().splitlines(keepends=True)
    (tmp_path / "samples.csv").write_text(lines[0] + lines[1] + lines[2] + lines[3][:40])  # killed in trial 2
    result = tune.search(tmp_path, workers=1, **SEARCH)
    assert (result.resumed, result.computed) == (2, 2)
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()
    with pytest.raises(ParameterError, match="other arguments"):
        tune.search(tmp_path, workers=1, **{**SEARCH, "seed": 5})
    with pytest.raises(ParameterError, match="beyond this search"):
        tune.search(tmp_path, workers=1, **{**SEARCH, "trials": 2})


def test_local_pool_and_dask_give_the_same_trials(tmp_path, capsys):
    """Batches of 2 (two local workers, or a cluster with two threads): the same CSV either way."""
    distributed = pytest.importorskip("distributed")
    argv = ["tune", "balance", "--search", "optuna", "--trials", "3", "--seed", "4", "--duration", "1.0",
            "--workers", "2", "--no-progress", "--out", str(tmp_path / "pool")]
    assert main(argv) in (0, 1)  # 1: nothing balanced in 1 s, so nothing to recommend
    assert "3 Optuna Gaussian-process trials (seed 4)" in capsys.readouterr().out
    assert (tmp_path / "pool" / "pareto.png").stat().st_size > 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        tune.search(tmp_path / "dask", scheduler=cluster.scheduler_address, **SEARCH)
    assert (tmp_path / "dask" / "samples.csv").read_bytes() == (tmp_path / "pool" / "samples.csv").read_bytes()


def test_gaussian_process_steps_are_deterministic_and_resume(tmp_path):
    """14 trials of 2 s runs: the last 4 come from the Gaussian processes (10 random start-up trials
    first); a second search gives the same bytes, and one killed in trial 12 resumes to them."""
    args = dict(trials=13, seed=2, duration=2.0, plots_=False, workers=1, sampler="gp")
    first = tune.search(tmp_path / "a", **args)
    assert first.computed == 14
    tune.search(tmp_path / "b", **args)
    assert (tmp_path / "b" / "samples.csv").read_bytes() == (tmp_path / "a" / "samples.csv").read_bytes()
    lines = (tmp_path / "a" / "samples.csv").read_text().splitlines(keepends=True)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "samples.csv").write_text("".join(lines[:13]))  # header + trials 0-11
    resumed = tune.search(tmp_path / "c", **args)
    assert (resumed.resumed, resumed.computed) == (12, 2)
    assert (tmp_path / "c" / "samples.csv").read_bytes() == (tmp_path / "a" / "samples.csv").read_bytes()
    tpe = tune.search(tmp_path / "tpe", **{**args, "sampler": "tpe"})
    assert [r["q_x"] for r in tpe.rows[11:]] != [r["q_x"] for r in first.rows[11:]]

