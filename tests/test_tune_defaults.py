"""What a tune takes from its experiment and from the defaults run: the experiment's declared tune, a bound by
the defaults' own value (and the front a search traces below it), and the best run of one tune fixed in the
next (``--set-from``).  A user's experiment of plain arithmetic, so the file is fast."""

from __future__ import annotations

import csv
import json
import textwrap

import pytest

from crossdyn.experiments.core import registry
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.sweep import search
from crossdyn.experiments.core.sweep.experiment import best_params, tune

# A design (x, y) whose cost falls as it spends more effort; it passes while y stays under a limit that
# --set can move.  Its declared tune varies both and keeps the effort within the defaults'.
USER_FILE = textwrap.dedent('''
    from crossdyn import Param, experiment


    @experiment("spend", summary="cost against effort", expected="y below the limit",
                params={"x": Param(1.0, "a gain", 0.0, 10.0), "y": Param(1.0, "another", 0.0, 10.0),
                        "limit": Param(5.0, "the largest y that passes", 0.0, 10.0)},
                default_tune={"vary": ["x=0.5:4", "y=0.5:4"], "minimize": "cost",
                              "constraints": ["effort<=defaults"]})
    def spend(ctx):
        x, y = ctx.params["x"], ctx.params["y"]
        passed = bool(y < ctx.params["limit"])
        return {"passed": passed, "measured": f"y {y:g}", "cost": 10.0 / (1 + x + 2 * y), "effort": x * x + y,
                "slack": y - ctx.params["limit"]}
''')


@pytest.fixture(scope="module")
def user_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("spend") / "spend.py"
    path.write_text(USER_FILE)
    return str(path)


def test_the_declared_tune_runs_without_vary_and_bounds_by_the_defaults(user_file, tmp_path):
    result = tune("spend", tmp_path, samples=12, seed=1, sources=(user_file,), plots=False)
    assert [v.name for v in result.space] == ["x", "y"] and result.minimize == "cost"
    defaults_effort = float(result.rows[0]["effort"])  # x = y = 1: 2.0
    assert result.constraints == [("effort", "<=", defaults_effort)]
    cheaper = [r for r in result.rows if r["outcome"] == "pass" and float(r["effort"]) <= defaults_effort]
    assert result.best == min(cheaper, key=lambda r: float(r["cost"]))
    assert any(float(r["cost"]) < float(result.best["cost"]) for r in result.rows)  # the bound mattered
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["constraints"] == ["effort<=defaults"] and best["rule"].endswith(f"effort <= the defaults' "
                                                                                f"{defaults_effort:g}")


def test_set_leaves_a_declared_range_out_and_failing_defaults_bound_nothing(user_file, tmp_path):
    # limit 0.9: the defaults (y = 1) fail, so no effort bound: the best is the cheapest passing run.
    result = tune("spend", tmp_path, samples=8, seed=1, fixed={"x": "2", "limit": "0.9"}, sources=(user_file,),
                  plots=False)
    best = json.loads((tmp_path / "best.json").read_text())
    assert [v.name for v in result.space] == ["y"] and best["fixed"] == {"x": 2.0, "limit": 0.9}
    assert result.rows[0]["outcome"] == "fail" and result.constraints == [("effort", "<=", float("inf"))]
    passing = [r for r in result.rows if r["outcome"] == "pass"]
    assert passing and result.best == min(passing, key=lambda r: float(r["cost"]))
    assert "none: they failed" in best["rule"]


def test_a_search_traces_the_front_below_the_defaults(user_file, tmp_path, monkeypatch):
    """With ``effort<=defaults`` the gp sampler's levels are the defaults' effort times the front's levels; with
    ``cost:log`` it models log cost."""
    given = {}
    real = search.sampler

    def spy(name, seed, **gp):
        given.update(gp)
        return real(name, seed, **gp)

    monkeypatch.setattr(search, "sampler", spy)
    tune("spend", tmp_path / "front", search="optuna", samples=2, sources=(user_file,), plots=False)
    assert given["levels"] == tuple(f * 2.0 for f in search.FRONT_LEVELS)  # the defaults' effort is 2
    given.clear()
    tune("spend", tmp_path / "flat", search="optuna", samples=2, constraints=["effort<=2"], sources=(user_file,),
         plots=False)
    assert given["levels"] == (float("inf"),) and not given["log_objective"]  # a number bounds each run: no front
    given.clear()
    result = tune("spend", tmp_path / "log", search="optuna", samples=2, minimize="cost:log", sources=(user_file,),
                  plots=False)
    assert given["log_objective"] and result.minimize == "cost"  # the search models log cost; the best is by cost
    with pytest.raises(ParameterError, match="its logarithm needs a positive metric"):
        tune("spend", tmp_path / "neg", search="optuna", samples=2, minimize="slack:log", sources=(user_file,))


def test_a_search_can_draw_ratios_to_one_parameter(user_file, tmp_path):
    """``ratios_to``: the search draws x / y and places y; trial 0 is the defaults, drawn as their ratio."""
    result = tune("spend", tmp_path / "ratios", search="optuna", samples=4, vary=["x=0.5:4:log", "y=0.5:4:log"],
                  minimize="cost", ratios_to="y", sources=(user_file,), plots=False)
    rows = result.rows
    assert rows[0]["kind"] == "default" and (rows[0]["x"], rows[0]["y"]) == ("1.0", "1.0")
    assert all(0.5 <= float(r[k]) <= 4.0 for r in rows for k in ("x", "y"))
    # y is the geometric middle of where both fit their range 0.5..4, so x y = 0.5 * 4 (1e-9: a square root's
    # round-off on numbers of order 1)
    assert all(abs(float(r["x"]) * float(r["y"]) - 2.0) < 1e-9 for r in rows[1:])
    plain = tune("spend", tmp_path / "plain", search="optuna", samples=4, vary=["x=0.5:4:log", "y=0.5:4:log"],
                 minimize="cost", sources=(user_file,), plots=False)
    assert [r["x"] for r in plain.rows[1:]] != [r["x"] for r in rows[1:]]  # the draws are others
    for vary, message in ((["x=0.5:4", "y=0.5:4:log"], "must be a range LO:HI:log"),
                          (["x=0.5:4:log"], "not a parameter this tune varies")):
        with pytest.raises(ParameterError, match=message):
            tune("spend", tmp_path / "bad", search="optuna", vary=vary, minimize="cost", ratios_to="y",
                 sources=(user_file,))


def test_set_from_fixes_the_best_run_of_another_tune(user_file, tmp_path):
    first = tune("spend", tmp_path / "first", samples=6, seed=2, sources=(user_file,), plots=False)
    fixed = best_params(tmp_path / "first")
    assert {k: float(v) for k, v in fixed.items()} == {k: float(first.best[k]) for k in ("x", "y")}
    argv = ["tune", "spend", "--from", user_file, "--set-from", str(tmp_path / "first"), "--vary", "limit=1,9",
            "--search", "grid", "--workers", "1", "--no-progress", "--out", str(tmp_path / "map")]
    assert main(argv) == 0
    rows = list(csv.DictReader((tmp_path / "map" / "samples.csv").read_text().splitlines()))
    assert [r["limit"] for r in rows[1:]] == ["1.0", "9.0"]
    assert all(json.loads((tmp_path / "map" / "best.json").read_text())["fixed"][k] == float(v)
               for k, v in fixed.items())


@pytest.mark.parametrize("content, message", [
    (None, "No such file"),
    ('{"best": null}', "that tune chose no run"),
    ('{"chosen": {}}', "not a tune's best.json"),
])
def test_set_from_a_folder_without_a_best_run_is_one_line(user_file, tmp_path, capsys, content, message):
    if content is not None:
        (tmp_path / "best.json").write_text(content)
    argv = ["tune", "spend", "--from", user_file, "--set-from", str(tmp_path), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_declared_tune_is_checked_when_registered():
    for tune_, message in (({"varry": []}, "no key 'varry'"), ({"vary": "x=1:2"}, "a list of texts")):
        with pytest.raises(ParameterError, match=message):
            registry.experiment("bad-tune", summary="s", expected="e", default_tune=tune_)(lambda ctx: {})
    assert "bad-tune" not in registry.experiments()
