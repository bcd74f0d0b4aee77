"""crossdyn tune biped-balance-tune --search optuna: deterministic, resumable, on the local pool and on Dask.

Tiny searches (3 trials of 1 s runs, which do not settle: the objectives still
order them) keep the file fast; the 64-trial comparison with the Latin
hypercube is benchmarks/search_vs_lhs.py.
"""

from __future__ import annotations

import csv

import pytest

from crossdyn.experiments.biped import tune as biped
from crossdyn.experiments.biped.scenarios import WEIGHTS
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.sweep.engine import TuneEngine
from crossdyn.experiments.core.sweep.experiment import tune

SEARCH = dict(search="optuna", samples=3, seed=4, fixed={"duration_s": "1.0"}, plots=False)


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _search(out, **changes):
    return tune(biped.BALANCE, out, **{**SEARCH, **changes})


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    result = _search(out)
    return out / "samples.csv", result


def test_every_trial_is_a_row_and_trial_0_is_the_defaults(serial):
    path, result = serial
    rows = _rows(path)
    assert [r["sample"] for r in rows] == ["0", "1", "2", "3"] and result.computed == 4
    assert rows[0]["kind"] == "default" and [float(rows[0][w]) for w in WEIGHTS] == [20.0, 10.0, 100.0, 1.0, 1.0]
    assert {r["kind"] for r in rows[1:]} == {"optuna"} and all(r["outcome"] for r in rows)
    for r in rows[1:]:  # drawn within the declared ranges
        assert all(biped.RANGES[w][0] <= float(r[w]) <= biped.RANGES[w][1] for w in WEIGHTS)


def test_serial_search_is_deterministic_for_a_seed(serial, tmp_path):
    path, _ = serial
    _search(tmp_path / "again")
    assert (tmp_path / "again" / "samples.csv").read_bytes() == path.read_bytes()
    _search(tmp_path / "other", seed=5)
    assert [r["q_x"] for r in _rows(tmp_path / "other" / "samples.csv")[1:]] != [r["q_x"] for r in _rows(path)[1:]]


def test_resume_runs_only_the_missing_trials(serial, tmp_path):
    path, _ = serial
    lines = path.read_text().splitlines(keepends=True)
    (tmp_path / "samples.csv").write_text(lines[0] + lines[1] + lines[2] + lines[3][:40])  # killed in trial 2
    result = _search(tmp_path)
    assert (result.resumed, result.computed) == (2, 2)
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()
    with pytest.raises(ParameterError, match="other arguments"):
        _search(tmp_path, seed=5)
    with pytest.raises(ParameterError, match="beyond this search"):
        _search(tmp_path, samples=2)


def test_local_pool_and_dask_give_the_same_trials(tmp_path, capsys):
    """Batches of 2 (two local workers, or a cluster with two threads): the same CSV either way."""
    distributed = pytest.importorskip("distributed")
    argv = ["tune", biped.BALANCE, "--search", "optuna", "--trials", "3", "--seed", "4", "--set", "duration_s=1.0",
            "--workers", "2", "--no-progress", "--out", str(tmp_path / "pool")]
    assert main(argv) in (0, 1)  # 1: nothing balanced in 1 s, so nothing to recommend
    assert "4 runs (3 Optuna gp over q_x, q_xd, q_theta, q_thetad, r + the defaults)" in capsys.readouterr().out
    assert (tmp_path / "pool" / "progress.png").stat().st_size > 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        _search(tmp_path / "dask", engine=TuneEngine(scheduler=cluster.scheduler_address))
    assert (tmp_path / "dask" / "samples.csv").read_bytes() == (tmp_path / "pool" / "samples.csv").read_bytes()


def test_gaussian_process_steps_are_deterministic_and_resume(tmp_path):
    """14 trials of 2 s runs: the last 4 come from the Gaussian processes tracing the front below the defaults'
    effort (10 random start-up trials first); a second search gives the same bytes, and one killed in trial 12
    resumes to them."""
    args = dict(samples=13, seed=2, fixed={"duration_s": "2.0"}, sampler="gp")
    first = _search(tmp_path / "a", **args)
    assert first.computed == 14
    _search(tmp_path / "b", **args)
    assert (tmp_path / "b" / "samples.csv").read_bytes() == (tmp_path / "a" / "samples.csv").read_bytes()
    lines = (tmp_path / "a" / "samples.csv").read_text().splitlines(keepends=True)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "samples.csv").write_text("".join(lines[:13]))  # header + trials 0-11
    resumed = _search(tmp_path / "c", **args)
    assert (resumed.resumed, resumed.computed) == (12, 2)
    assert (tmp_path / "c" / "samples.csv").read_bytes() == (tmp_path / "a" / "samples.csv").read_bytes()
    tpe = _search(tmp_path / "tpe", **{**args, "sampler": "tpe"})
    assert [r["q_x"] for r in tpe.rows[11:]] != [r["q_x"] for r in first.rows[11:]]
