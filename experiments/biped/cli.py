"""The options and reports of the biped's two tunings, registered experiments the generic tune runs:

    crossdyn tune balance [--samples N | --grid NAME=VALUES ... | --search optuna --trials N [--sampler gp|tpe]]
                          [--workers K] [--seed S] [--scheduler ADDR] [--mjcf PATH] [--out DIR]
    crossdyn tune robustness [--weight NAME=VALUE ... | --weights-from DIR] [--axis NAME=VALUES ...] [--seed S]
                             [--mjcf PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from crossdyn.experiments.core.cli import arguments
from crossdyn.experiments.core.cli.tune import (
    DEFAULT_OUT,
    add_engine_options,
    interrupted,
    sigterm_interrupts,
    tune_engine,
)
from crossdyn.experiments.core.limits import DURATION_MAX
from crossdyn.experiments.core.runner import as_stored

__all__ = ["configure_balance", "configure_robustness"]


def _stored_summary(result) -> dict:
    """The sweep's summary file content as stored (inf as text), from memory."""
    assert result.summary is not None  # tune.finish and tune.robustness always set it
    return as_stored(result.summary)


def _fmt_weights(weights: dict) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in weights.items())


def _fmt_metrics(s: dict) -> str:
    n = {k: float(v) for k, v in s.items() if k not in ("weights", "gains_at_stance", "outcome")}  # "inf" from JSON
    return (f"settle {n['settling_time_s']:.2f} s, effort {n['effort_N2m2s']:.3f} (N m)^2 s, "
            f"overshoot {n['overshoot_deg']:.2f} deg, max |T| {n['max_wheel_torque']:.2f} N m [{s['outcome']}]")


def _cmd_tune_balance(args) -> int:
    from crossdyn.experiments.biped import tune
    from crossdyn.experiments.core.errors import ParameterError

    optuna = args.search == "optuna"
    if optuna and (args.samples is not None or args.grid):
        raise ParameterError("--search optuna takes --trials N, not --samples or --grid")
    if args.trials is not None and not optuna:
        raise ParameterError("--trials is for --search optuna; a Latin hypercube takes --samples N")
    if args.sampler is not None and not optuna:
        raise ParameterError("--sampler is for --search optuna; a Latin hypercube draws blindly")
    sampler = args.sampler or next(iter(tune.SAMPLERS))
    grid = tune.parse_values(args.grid) if args.grid else None
    samples = args.samples if args.samples is not None or grid is not None else 32
    trials = args.trials if args.trials is not None else 64
    ranges, engine = tune.parse_range(args.range), tune_engine(args)
    out = Path(args.out)  # made by the sweep once every input is known to be good
    common = dict(seed=args.seed, ranges=ranges, duration=args.duration, initial_tilt_deg=args.tilt,
                  timeout=args.timeout, push_check=args.push, mjcf=args.mjcf, **engine)
    try:
        with sigterm_interrupts():
            if optuna:
                result = tune.search(out, trials=trials, sampler=sampler, **common)
            else:
                result = tune.sweep(out, samples=samples, grid=grid, **common)
    except KeyboardInterrupt:
        return interrupted(out / "samples.csv")
    if optuna:
        how = f"{trials} Optuna {tune.SAMPLERS[sampler]} trials (seed {args.seed})"
    else:
        how = f"grid of {len(result.rows) - 1}" if grid else f"{samples} Latin-hypercube (seed {args.seed})"
    print(f"tune balance: {len(result.rows)} samples ({how} + the defaults); {result.computed} run in "
          f"{result.seconds:.1f} s, {result.resumed} resumed from {result.csv}")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(result.counts().items())))
    best = _stored_summary(result)  # best.json's content, as stored (inf as text), from memory
    default, chosen = best["defaults"], best["chosen"]
    print(f"  defaults  {_fmt_weights(default['weights'])}: {_fmt_metrics(default)}")
    if chosen is None:
        print("  no sample balanced without saturating: nothing to recommend")
        return 1
    print(f"  best      {_fmt_weights(chosen['weights'])}: {_fmt_metrics(chosen)}")
    print("            gains at stance K = [" + ", ".join(f"{k:.3f}" for k in chosen["gains_at_stance"]) + "]")
    if chosen["sample"] == 0:
        print("  no sample settles sooner with no more effort: the defaults stay")
    elif default["outcome"] == "ok":
        dt = default["settling_time_s"] - chosen["settling_time_s"]
        de = 100 * (1 - chosen["effort_N2m2s"] / default["effort_N2m2s"])
        verdict = "at least as good as" if dt >= 0 and de >= 0 else "not better on both counts than"
        print(f"  best settles {dt:.2f} s sooner with {de:.1f} % less effort: {verdict} the defaults")
    pngs = ", ".join(sorted(p.name for p in out.glob("*.png")))
    print(f"  results in {out} (samples.csv, best.json, {pngs}; timings.csv)")
    return 0


def _cmd_tune_robustness(args) -> int:
    from crossdyn.experiments.biped import tune
    from crossdyn.experiments.core.errors import ParameterError

    weights = tune.weights_from(args.weights_from) if args.weights_from else {}
    given = tune.parse_values(args.weight)
    if any(len(v) != 1 for v in given.values()):
        raise ParameterError("--weight takes one value per weight (NAME=VALUE)")
    weights.update({k: float(v[0]) for k, v in given.items()})
    axes = tune.parse_values(args.axis, kind="perturbation") if args.axis else None
    engine = tune_engine(args)
    out = Path(args.out)  # made by the sweep once every input is known to be good
    try:
        with sigterm_interrupts():
            result = tune.robustness(out, weights=weights, axes=axes, duration=args.duration, seed=args.seed,
                                     timeout=args.timeout, mjcf=args.mjcf, **engine)
    except KeyboardInterrupt:
        return interrupted(out / "robustness.csv")
    summary = _stored_summary(result)  # robustness.json's content, from memory
    held = sum(r["held"] == "true" for r in result.rows)
    print(f"tune robustness: {_fmt_weights(summary['weights'])}")
    print(f"  holds in {held}/{len(result.rows)} cells of " + " x ".join(summary["axes"]) + f"; {result.computed} run "
          f"in {result.seconds:.1f} s, {result.resumed} resumed")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(result.counts().items())))
    region = summary["holding_region"]
    b = next(k for k in summary["axes"] if k != region["by"])
    for row in region["rows"]:
        span = "nowhere" if row["span"] is None else f"{row['span'][0]:g}..{row['span'][1]:g}"
        print(f"  {region['by']}={row[region['by']]:g}: holds for {b} {span}"
              + ("" if row["contiguous"] else " (with gaps)"))
    print(f"  results in {out} (robustness.csv, robustness.png, robustness.json; timings.csv)")
    return 0


def _grid_help() -> str:
    """The epilog of ``tune balance``, built from the defaults it describes."""
    from crossdyn.experiments.biped import tune

    defaults = " ".join(f"{k}={v:g}" for k, v in tune.DEFAULT_WEIGHTS.items())
    ranges = ", ".join(f"{k} {lo:g}:{hi:g}" for k, (lo, hi) in tune.RANGES.items())
    return f"""\
Weights: q_x (1/m^2), q_xd (s^2/m^2), q_theta (1/rad^2), q_thetad (s^2/rad^2) on
the LQR state [x, xd, theta, thetad], and r (1/(N m)^2) on the total wheel torque.
Defaults {defaults}.

  --grid NAME=V1,V2,...   these values of one weight (repeat for more weights;
  --grid NAME=LO:HI:N     every combination is run; N evenly spaced values)
  --range NAME=LO:HI      Latin-hypercube bounds (log-uniform) instead of the
                          built-in ones ({ranges})

Example: crossdyn tune balance --grid q_theta=10,100,1000 --grid r=0.1,1,10
Search:  crossdyn tune balance --search optuna --trials 64 --seed 0
         (trials run a batch of --workers at a time; the same seed and worker
         count give the same samples.csv; one worker is the serial search)
Sample 0 is always the defaults, the reference the best is compared with.
Dask: start 'dask scheduler' and 'dask worker tcp://HOST:8786' on machines that
have crossdyn installed, then add --scheduler tcp://HOST:8786.
"""


def configure_balance(p_bal: argparse.ArgumentParser) -> None:
    """sweep or search the biped's balance LQR weights over balance-recovery runs"""
    from crossdyn.experiments.biped import tune

    p_bal.formatter_class = argparse.RawDescriptionHelpFormatter
    p_bal.epilog = _grid_help()
    how = p_bal.add_mutually_exclusive_group()
    how.add_argument("--samples", type=arguments.count(1, tune.SAMPLES_MAX, "--samples"),
                     help=f"Latin-hypercube samples (default 32, at most {tune.SAMPLES_MAX:,})")
    how.add_argument("--grid", type=arguments.key_value, action="append", default=[], metavar="NAME=VALUES",
                     help="grid values of one weight (repeatable; see below)")
    p_bal.add_argument("--search", choices=tune.SEARCHES, default="lhs",
                       help="lhs: sample blindly (--samples or --grid; default); optuna: an Optuna study of "
                            "settling time x effort chooses each batch of weights from the runs made")
    p_bal.add_argument("--sampler", choices=tune.SAMPLERS, default=None,
                       help="the sampler of --search optuna: gp (default), Gaussian processes of settling time and "
                            "effort, each trial minimizing settling time within "
                            f"{' or '.join(f'{f:g}' for f in tune.EFFORT_LEVELS)} of the defaults' effort; "
                            "tpe, Optuna's multi-objective TPE")
    p_bal.add_argument("--trials", type=arguments.count(1, tune.TRIALS_MAX, "--trials"), metavar="N",
                       help=f"trials of --search optuna after the defaults (default 64, at most {tune.TRIALS_MAX:,})")
    p_bal.add_argument("--range", type=arguments.key_value, action="append", default=[], metavar="NAME=LO:HI",
                       help="Latin-hypercube bounds of one weight (repeatable)")
    tilt = tune.PERTURBATIONS["initial_tilt_deg"]
    p_bal.add_argument("--tilt", type=arguments.number(tilt.low, tilt.high, "--tilt"), default=tilt.default,
                       metavar="DEG", help=f"initial tilt, deg (default {tilt.default:g})")
    push = tune.PERTURBATIONS["push_impulse_Ns"]
    p_bal.add_argument("--push", type=arguments.number(push.low, push.high, "--push"), default=0.0, metavar="NS",
                       help=f"also require recovery from this push, N s over {tune.PUSH_LENGTH:g} s "
                            f"(default: no push run; at most {push.high:g})")
    _add_tune_common(p_bal, "tune-balance", duration=4.0, seeded="the Latin hypercube or the search")
    p_bal.set_defaults(func=_cmd_tune_balance)


def configure_robustness(p_rob: argparse.ArgumentParser) -> None:
    """map where the biped's balance holds over two perturbation axes, for given LQR weights"""
    from crossdyn.experiments.biped import tune

    axes = " ".join(f"{k}={','.join(f'{x:g}' for x in v)}" for k, v in tune.DEFAULT_AXES.items())
    p_rob.add_argument("--weight", type=arguments.key_value, action="append", default=[], metavar="NAME=VALUE",
                       help="an LQR weight (repeatable; others default)")
    p_rob.add_argument("--weights-from", metavar="DIR", help="the chosen weights of a sweep (its folder or best.json)")
    p_rob.add_argument("--axis", type=arguments.key_value, action="append", default=[], metavar="NAME=VALUES",
                       help=f"a perturbation axis, two needed: {', '.join(tune.PERTURBATIONS)}; values V1,V2,... "
                            f"or LO:HI:N (default {axes}; a push map starts upright)")
    _add_tune_common(p_rob, "tune-robustness", duration=6.0, seeded="the imperfections' noise and biases")
    p_rob.set_defaults(func=_cmd_tune_robustness)


def _add_tune_common(p: argparse.ArgumentParser, name: str, duration: float, seeded: str) -> None:
    p.add_argument("--seed", type=arguments.seed, default=0,
                   help=f"seed of {seeded} (default 0; 0 to {arguments.SEED_MAX})")
    p.add_argument("--mjcf", default="", metavar="PATH",
                   help="the robot: an MJCF meeting crossdyn's contract, or a model name in crossdyn's mjcf/ folder "
                        "(default: the built-in robot); gains are designed from its parameters")
    p.add_argument("--duration", type=arguments.number(0.0, DURATION_MAX, "--duration", low_open=True),
                   default=duration, metavar="S",
                   help=f"simulated time per run, s (default {duration:g}, at most {DURATION_MAX:g})")
    add_engine_options(p, DEFAULT_OUT / name, name)
