"""crossdyn tune's printed summary: a run breaking a --constraint is marked so (the defaults too), and the
defaults' and the best run's constrained metrics are printed beside the minimized one."""

from __future__ import annotations

import re
import textwrap

from crossdyn.experiments.core.cli import main

# A controller's gain trades a slower settle against a larger peak command (closed form, no simulation).
USER_FILE = textwrap.dedent('''
    from crossdyn.experiments import Param, experiment


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
