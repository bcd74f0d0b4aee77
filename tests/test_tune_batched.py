"""A tune of an experiment with a batched form runs batches of closed loops, and its rows are the same numbers."""

from __future__ import annotations

import pytest

from crossdyn.experiments.core import registry
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.sweep import experiment as sweep
from crossdyn.experiments.core.sweep.engine import TuneEngine
from crossdyn.experiments.core.sweep.experiment import Job, JobBatch, evaluate, evaluate_batch, tune

# A 2 x 2 grid over the LQR weights (r = 1e-6 and q_angle = 1000 make failing, not erroring, runs), short runs.
VARY = ["q_angle=1:1000:log", "r=0.000001:1:log"]


@pytest.mark.parametrize("name", ["cart-pole-lqr", "double-pendulum-cart-lqr"])
def test_a_batch_gives_each_run_the_row_it_has_alone(name):
    weight = "q_angle" if name == "cart-pole-lqr" else "q_lower"
    jobs = [Job(i, "grid", name, (), ((weight, q), ("r", r)), (weight, "r"), 0, True)
            for i, (q, r) in enumerate([(10.0, 0.1), (300.0, 2.0), (50.0, 1e-6)], start=1)]
    together = evaluate_batch(JobBatch(tuple(jobs)))
    alone = [evaluate(job) for job in jobs]
    assert together == alone
    assert {row["outcome"] for row in together} == {"pass", "fail"}  # both kinds of run in the batch


def test_the_check_can_fail_other_parameters_give_other_rows():
    job = Job(1, "grid", "cart-pole-lqr", (), (("q_angle", 10.0),), ("q_angle",), 0, True)
    other = Job(1, "grid", "cart-pole-lqr", (), (("q_angle", 11.0),), ("q_angle",), 0, True)
    assert evaluate_batch(JobBatch((job,))) != [evaluate(other)]


def test_a_batched_form_that_fails_falls_back_to_runs_alone(monkeypatch):
    exp = registry.experiments()["cart-pole-lqr"]

    def broken(contexts):
        raise RuntimeError("the batch broke")

    monkeypatch.setitem(registry._REGISTRY, "cart-pole-lqr", registry.dataclasses.replace(exp, batch=broken))
    sweep._experiment.cache_clear()
    try:
        job = Job(1, "grid", "cart-pole-lqr", (), (("q_angle", 10.0),), ("q_angle",), 0, True)
        assert evaluate_batch(JobBatch((job,))) == [evaluate(job)]
        assert evaluate(job)["outcome"] == "pass"
    finally:
        sweep._experiment.cache_clear()


def test_tune_rows_are_the_same_batched_or_one_run_at_a_time(tmp_path):
    batched = tune("cart-pole-lqr", tmp_path / "batched", vary=VARY, search="grid", samples=4, short=True,
                   plots=False)
    # A time limit is per run, so a tune with one runs them one at a time; so does one told not to batch.
    alone = tune("cart-pole-lqr", tmp_path / "alone", vary=VARY, search="grid", samples=4, short=True, plots=False,
                 engine=TuneEngine(timeout=600))
    unbatched = tune("cart-pole-lqr", tmp_path / "unbatched", vary=VARY, search="grid", samples=4, short=True,
                     plots=False, engine=TuneEngine(batch=False))
    assert len(batched.rows) == 5 and batched.rows == alone.rows == unbatched.rows
    assert {row["outcome"] for row in batched.rows} == {"pass", "fail"}


def test_batched_needs_a_registered_experiment():
    with pytest.raises(ParameterError, match="register it first"):
        registry.batched("no-such-experiment")(lambda contexts: [])


CRASHY = '''\
import ctypes

from crossdyn.experiments.core.registry import Param, batched, experiment


@experiment("crashy", summary="a run that segfaults at x = 5", expected="x back",
            params={"x": Param(0.0, "where it runs", 0.0, 10.0)})
def crashy(ctx):
    if ctx.params["x"] == 5.0:
        ctypes.string_at(0)  # reads address 0: SIGSEGV, alone or in a batch
    return {"passed": True, "measured": f"x {ctx.params['x']:g}", "x_back": float(ctx.params["x"])}


@batched("crashy")
def crashy_batch(contexts):
    return [crashy(ctx) for ctx in contexts]
'''


def test_a_crash_in_a_batch_costs_that_run_only(tmp_path):
    """A grid of 11 runs in batches of 6: the run at x = 5 segfaults; the 5 others of its batch keep their rows."""
    (tmp_path / "crashy.py").write_text(CRASHY)
    result = tune("crashy", tmp_path / "out", vary=["x=0:10"], search="grid", samples=11, plots=False,
                  sources=(str(tmp_path / "crashy.py"),))
    outcomes = {float(row["x"]): row["outcome"] for row in result.rows[1:]}
    assert len(outcomes) == 11 and outcomes.pop(5.0) == "crashed", result.rows
    assert set(outcomes.values()) == {"pass"}, outcomes  # each run of the crashed batch, run again, has its own row
    assert all(float(row["x_back"]) == float(row["x"]) for row in result.rows if row["outcome"] == "pass")
