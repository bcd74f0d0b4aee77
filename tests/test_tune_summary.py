"""crossdyn tune's printed summary: a run breaking a --constraint is marked so (the defaults too), and the
defaults' and the best run's constrained metrics are printed beside the minimized one."""

from __future__ import annotations

import re
import textwrap

import numpy as np

from crossdyn.experiments.core.cli import main

# A controller's gain trades a slower settle against a larger peak command (closed form, no simulation).
USER_FILE = textwrap.dedent('''
    from crossdyn import Param, experiment


    @experiment("gain-trade", summary="settle against peak command", expected="settles",
                params={"gain": Param(10.0, "gain, 1/s", 0.1, 20.0)})
    def gain_trade(ctx):
        gain = ctx.params["gain"]
        return {"passed": True, "measured": f"gain {gain:g}", "settle_s": 4.0 / gain, "peak_command": 0.07 * gain}
''')


def test_the_summary_marks_constraint_breakers_and_prints_constrained_metrics(tmp_path, capsys):
    source = tmp_path / "gain_trade.py"
    source.write_text(USER_FILE)
    args = ["tune", "gain-trade", "--from", str(source), "--vary", "gain=0.5:8", "--minimize", "settle_s",
            "--constraint", "peak_command<=0.3", "--samples", "4", "--workers", "1", "--seed", "0",
            "--out", str(tmp_path / "out"), "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    defaults = next(line for line in out.splitlines() if line.lstrip().startswith("defaults"))
    best = next(line for line in out.splitlines() if line.lstrip().startswith("best"))
    # The defaults (gain 10) command 0.7 > 0.3: they pass the experiment but break the constraint.
    assert defaults.endswith("settle_s 0.4, peak_command 0.7 [pass; breaks peak_command<=0.3]"), defaults
    gain = float(re.search(r"gain=(\S+):", best).group(1))
    assert gain <= 0.3 / 0.07
    assert f"settle_s {4.0 / gain:.4g}, peak_command {0.07 * gain:.4g} [pass]" in best, best


# --- plots that never draw round-off as a signal -------------------------------------------------------------------

def _tilt_rows(spread: float) -> list[dict]:
    """A 4 x 3 map's rows: a final tilt of 2 deg that varies by ``spread`` deg (seeded), all runs passing."""
    rng = np.random.default_rng(0)
    return [{"sample": str(k + 1), "outcome": "pass", "a": str(float(i)), "b": str(float(j)),
             "tilt_deg": repr(2.0 + spread * rng.standard_normal())}
            for k, (i, j) in enumerate((i, j) for i in range(4) for j in range(3))]


def test_a_map_of_round_off_draws_flat_and_says_so():
    """1e-12 deg of round-off over a map: one colour, no colour bar, a title saying so; 0.1 deg is drawn."""
    from crossdyn.experiments.core import figures as core_plots
    from crossdyn.experiments.core.sweep import plots

    for spread, flat in ((1e-12, True), (0.1, False)):
        tilt = np.array([float(r["tilt_deg"]) for r in _tilt_rows(spread)]).reshape(4, 3)
        fig, ax = core_plots.figure(1, 1)
        plots.heat(ax, fig, [0, 1, 2, 3], [0, 1, 2], tilt, "a", "b", "final tilt (deg)")
        image = ax.images[0]
        colours = {tuple(np.round(c, 6)) for c in image.to_rgba(tilt).reshape(-1, 4)}
        assert (len(colours) == 1) is flat, colours
        assert ("constant 2: its variation is within its tolerance" in ax.get_title()) is flat, ax.get_title()
        assert (len(fig.axes) == 1) is flat  # no colour bar over round-off
        shown = plots.figures(tilt.ravel())
        assert (set(shown) == {"2"}) is flat, shown
    assert plots.figures([1e-12, -3e-13, float("nan")]) == ["0", "0", ""]  # below the tolerance: 0, no figure


def test_an_objective_of_round_off_draws_flat_and_says_so(tmp_path, monkeypatch):
    from crossdyn.experiments.core.sweep import plots
    from crossdyn.experiments.core.sweep.experiment import TuneResult
    from crossdyn.experiments.core.sweep.space import Vary

    drawn = []
    figure = plots.plots.figure
    monkeypatch.setattr(plots.plots, "figure", lambda *a, **k: drawn.append(figure(*a, **k)) or drawn[-1])
    rows = [{"sample": "0", "outcome": "pass", "a": "0.0", "b": "0.0", "tilt_deg": "2.0"}, *_tilt_rows(1e-12)]
    result = TuneResult(rows, len(rows), 0, 1.0, tmp_path / "samples.csv", experiment="tilt", minimize="tilt_deg",
                        space=[Vary("a", 0.0, 3.0), Vary("b", 0.0, 2.0)])
    plots.draw(tmp_path, result, "lhs")
    fig, axes = drawn[0]
    low, high = axes[0].get_ylim()
    assert high - low >= 0.2 * 2.0 and "tilt_deg constant 2: its variation" in fig._suptitle.get_text()
