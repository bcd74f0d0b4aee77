"""``crossdyn identify``, ``crossdyn check model``, ``crossdyn excite`` and ``crossdyn record``: is the MJCF the robot?

Usage::

    crossdyn identify --mjcf M --log L [--log L2 ...] --fit QUANTITY [--fit ...] [--validate V ...]
                      [--noise SIGNAL=VALUE ...] [--start-only SIGNAL ...] [--window S] [--out DIR]
    crossdyn check model --mjcf M --log L [--log L2 ...] [--noise SIGNAL=VALUE ...] [--tolerance X]
                      [--tolerance SIGNAL=VALUE ...] [--detect PARAMETER=SIZE ...] [--window S]
                      [--self-test [N]] [--seed N] [--out DIR]
    crossdyn excite --mjcf M --duration S --out cmd.csv [--fit QUANTITY ...] [--noise RAD] [--seed N]
    crossdyn record --mjcf M (--controller FILE.py:FN | --commands cmd.csv) --duration S --out log.csv

``identify`` fits what ``--fit`` names (:mod:`crossdyn.experiments.core.identify.spec`)
to the logs (:mod:`crossdyn.experiments.core.identify.fit`), prints one sentence per
parameter, judges the fitted model against every log as ``check model`` does, and
writes ``identified.json``, ``identified.xml``, a plot per log and ``index.html`` into
``DIR``: exit 0, or 1 when the fitted model still misses a log (something outside
``--fit`` is wrong).  ``check model`` replays the logs with the model as it is: exit 0
when it passes, 1 when it fails or the log cannot decide, 2 for bad input.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import mujoco
import numpy as np
from tqdm import tqdm

from ..checks.common import load_derivation
from ..errors import ParameterError
from ..files import make_out_dir, write_json
from ..identify import outputs
from ..identify.check_model import judge_fitted, parse_tolerance, replay
from ..identify.excite import design, determinacy
from ..identify.fit import COMMANDS, WINDOW, Problem, fit_and_replay
from ..identify.logs import Log, load_log, refuse_repeats, write_log
from ..identify.noise import resolve
from ..identify.outputs import plot_signals
from ..identify.record import record
from ..identify.self_test import FIT_RUNS, RUNS, run_coverage_test
from ..identify.spec import Quantity, parse_fit
from ..limits import DURATION_MAX, REPEATS_MAX, SEED_MAX, WINDOW_MAX, WINDOW_MIN
from ..models import load_model, model_path
from . import arguments

__all__ = ["add_parser", "configure_check_model", "DEFAULT_OUT"]

DEFAULT_OUT = Path("results")
START_HELP = ("a keyframe the joints no log reads start each window from (a floating base standing where the log "
              "stands; default the model's qpos0)")


def _window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--window", type=arguments.number(WINDOW_MIN, WINDOW_MAX, "--window"), default=WINDOW,
                   help=f"seconds per rollout re-anchored to the log's state (default {WINDOW})")


def _noise(p: argparse.ArgumentParser) -> None:
    p.add_argument("--noise", action="append", default=[], metavar="SIGNAL=VALUE",
                   help="a reading's noise (standard deviation) in its units, globs allowed ('qpos:*=5e-4'); "
                        "repeat. Unstated: the MJCF sensor's noise attribute, else estimated from the log where it "
                        "can tell (an encoder's grid, white noise), else refused")
    p.add_argument("--start-only", action="append", default=[], metavar="SIGNAL",
                   help="readings (globs) used for the windows' starts, not compared ('qvel:*': a motor's filtered "
                        "velocity estimate); repeat")
    p.add_argument("--start", default=None, metavar="KEYFRAME", help=START_HELP)
    p.add_argument("--commands", choices=COMMANDS, default="hold",
                   help="how the log's commands act between its samples: hold (default: each until the next, as a "
                        "controller at the log's rate holds it) or linear (interpolated: a log slower than the "
                        "commands it samples); the same for a log at the model's time step")


class _Stages:
    """A line per finished stage when the output is not a terminal (a CI log); a progress bar when it is.

    The lines go to stdout with the results, so that stderr holds nothing but an error's one line.
    """

    def __init__(self, command: str, total: int):
        self.command = command
        self.bar = tqdm(total=total, desc=command, unit="stage", leave=False) if sys.stdout.isatty() else None

    def done(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(text[:60])
            self.bar.update(1)
        else:
            print(f"{self.command}: {text}", flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def add_parser(sub) -> None:
    """Add ``identify``, ``excite`` and ``record`` to the top-level subcommands."""
    p = sub.add_parser("identify", help="fit a model's parameters to a robot's logs (mujoco.sysid)",
                       description="Fit what --fit names to the logs: one sentence per parameter, identified.json, "
                                   "identified.xml (the MJCF with only the fitted values changed), plots, index.html."
                                   " The fitted model is then judged against every log as 'check model' judges: exit "
                                   "0, 1 when it still misses a log (something outside --fit is wrong), 2 for bad "
                                   "input.")
    p.add_argument("--mjcf", required=True, help="the model (MJCF path or built-in name)")
    p.add_argument("--log", action="append", required=True, metavar="LOG",
                   help="a log, .csv or .npz (time, ctrl:<actuator>, qpos:<joint>, qvel:<joint>, sensor:<sensor>); "
                        "repeat for several")
    p.add_argument("--fit", action="append", required=True, metavar="QUANTITY",
                   help="what may change: body:<name>:mass|com|inertia|com[k]|inertia[k], joint:<name>:damping|"
                        "armature|frictionloss|stiffness, actuator:<name>:gear|bias, delay, sensor:<name>:bias "
                        "(globs allowed); repeat")
    p.add_argument("--validate", action="append", default=[], metavar="LOG",
                   help="a log replayed with the fitted model and judged, not fitted; repeat")
    _noise(p)
    _tolerance(p)
    _window(p)
    _self_test(p, FIT_RUNS, f"simulate the logs N times (default {FIT_RUNS}) with the fitted model and the stated "
                            "noise, fit each repeat as the logs were, and count how often each 95 %% interval holds "
                            "the value simulated; a count that contradicts 95 %% exits 1")
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, help="output folder (default results/)")
    p.set_defaults(func=_cmd_identify)

    p = sub.add_parser("excite", help="commands to run on the robot for identification (multisine within ctrlrange)",
                       description="Write commands to send to the robot (a multisine per actuator within its "
                                   "ctrlrange, shrunk until the model's limited joints stay in range) and say which "
                                   "--fit parameters such a log would leave poorly determined. Exit 0, 2 for bad "
                                   "input.")
    p.add_argument("--mjcf", required=True, help="the model (MJCF path or built-in name)")
    p.add_argument("--duration", type=arguments.number(0.0, DURATION_MAX, "--duration", low_open=True),
                   required=True, help="seconds of commands")
    p.add_argument("--out", type=arguments.out_file, required=True, help="the commands' file (.csv or .npz)")
    p.add_argument("--fit", action="append", default=[], metavar="QUANTITY",
                   help="a parameter to judge (as identify's --fit); repeat")
    p.add_argument("--noise", type=arguments.number(0.0, 1.0, "--noise", low_open=True), default=5e-4,
                   help="the encoders' noise the judgement assumes, rad (default 5e-4)")
    p.add_argument("--seed", type=arguments.seed, default=0, help="the multisine's phases and frequencies")
    p.set_defaults(func=_cmd_excite)

    p = sub.add_parser("record", help="log a model in simulation as a robot's logger would (identify's input)",
                       description="Run the model under a controller (FILE.py:FN, called as FN(t, reading) -> "
                                   "commands) or a commands file (as excite writes it) and write a log: the commands "
                                   "sent and every joint's position and velocity and every sensor, read at the same "
                                   "instant with the noise stated (--noise, else the MJCF sensor's). Exit 0, 2 for bad "
                                   "input.")
    p.add_argument("--mjcf", required=True, help="the model (MJCF path or built-in name)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--controller", metavar="FILE.py:FN", help="the controller: FN(t, reading) -> (nu,) commands")
    source.add_argument("--commands", metavar="FILE", help="a commands file (.csv or .npz: time, ctrl:<actuator>)")
    p.add_argument("--duration", type=arguments.number(0.0, DURATION_MAX, "--duration", low_open=True),
                   required=True, help="seconds logged")
    p.add_argument("--out", type=arguments.out_file, required=True, help="the log (.csv or .npz)")
    p.add_argument("--noise", action="append", default=[], metavar="SIGNAL=VALUE",
                   help="a reading's white noise in its units, globs allowed ('qpos:*=5e-4'); repeat")
    p.add_argument("--signals", action="append", default=None, metavar="SIGNAL",
                   help="the readings logged (globs: 'qpos:*', 'sensor:imu_*'); default every joint and sensor")
    p.add_argument("--delay", type=arguments.number(0.0, 1.0, "--delay"), default=0.0,
                   help="seconds between a command and the motor acting on it (default 0)")
    p.add_argument("--keyframe", default=None, help="the keyframe to start from (default the model's qpos0)")
    p.add_argument("--seed", type=arguments.seed, default=0, help="the noise's seed")
    p.set_defaults(func=_cmd_record)


def _self_test(p: argparse.ArgumentParser, runs: int, what: str) -> None:
    """``--self-test [N]`` (``runs`` when N is left out) and its ``--seed``."""
    p.add_argument("--self-test", type=arguments.count(1, REPEATS_MAX, "--self-test"), nargs="?", const=runs,
                   default=None, metavar="N", help=what)
    p.add_argument("--seed", type=arguments.count(0, SEED_MAX, "--seed"), default=0,
                   help="the self-test's seed (default 0)")


def _tolerance(p: argparse.ArgumentParser) -> None:
    # (the default is check_model.TOLERANCE, named in words: importing it here would load SciPy's statistics
    # for every command line crossdyn parses)
    p.add_argument("--tolerance", action="append", default=[], metavar="X | SIGNAL=VALUE",
                   help="largest RMS error in units of each reading's noise (default: twice it), and/or an "
                        "allowance in a signal's units for what no model holds ('qpos:*=0.002'); repeat")


def configure_check_model(p: argparse.ArgumentParser) -> None:
    """does this model reproduce this robot's log? (exit 0 yes, 1 no or cannot tell, naming why)"""
    p.description = ("Replay the logs with the model as it is, each window started from the log's state, and test "
                     "it: exit 0 when every reading stays within its noise and no parameter of the model is off by "
                     "more than the noise explains, 1 when one does (fail) or when the log could not have caught a "
                     "20 % change of the model's parameters (inconclusive), 2 for bad input.")
    p.add_argument("--mjcf", required=True, help="the model (MJCF path or built-in name)")
    p.add_argument("--log", action="append", required=True, metavar="LOG", help="a log (.csv or .npz); repeat")
    _noise(p)
    _tolerance(p)
    p.add_argument("--detect", action="append", default=[], metavar="PARAMETER=SIZE",
                   help="a change the check must be able to catch, or it is inconclusive: 'body:*:mass=10%%' (a "
                        "share) or 'joint:elbow:frictionloss=0.01' (in the parameter's unit); repeat")
    _window(p)
    _self_test(p, RUNS, f"simulate this log N times (default {RUNS}) with the model, and with each parameter "
                        "changed by the size the check says it can detect, check every repeat, and report the false "
                        "alarms and catches counted beside the stated rates; a stated rate they contradict makes the "
                        "verdict inconclusive")
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, help="output folder (default results/)")
    p.set_defaults(func=_cmd_check_model)


def _load(mjcf: str, logs: list[str]):
    """Model, its spec, its name and the logs, all checked before anything is written."""

    path = model_path(mjcf)
    model = load_model(path)
    spec = mujoco.MjSpec.from_file(str(path))
    return path, model, spec, [load_log(log, model, path.name) for log in logs]


def _cmd_identify(args) -> int:
    tolerance = args.tolerance or None
    parse_tolerance(tolerance)  # refused before any work
    path, model, spec, logs = _load(args.mjcf, args.log)
    validation_logs = _load(str(path), args.validate)[3] if args.validate else []
    refuse_repeats(logs + validation_logs)
    targets = parse_fit(args.fit, model, spec, path.name)
    noise = resolve(model, logs, args.noise)
    validation_noise = resolve(model, validation_logs, args.noise) if validation_logs else []
    out = make_out_dir(args.out)
    stages = _Stages("identify", 3 + len(logs) + len(validation_logs) + (args.self_test is not None))
    stages.done(f"read {len(logs)} log(s), {sum(log.time.size for log in logs)} samples; noise "
                + ", ".join(f"{k} {v.value[0]:.2g} ({v.source})" for k, v in noise[0].items()))
    pristine = spec.copy()  # the model as given: each self-test repeat is fitted on a copy of it
    problem = Problem(spec, targets, logs, window=args.window, noise=noise, start_only=args.start_only,
                      commands=args.commands, start=args.start)
    coverage = None
    try:
        result, measured, nominal, identified = fit_and_replay(problem)
        stages.done(f"fitted {len(targets)} quantities in {result.seconds:.1f} s ({result.iterations} Jacobians)")
        if args.self_test is not None:
            coverage = run_coverage_test(problem, result, pristine, name=path.name, runs=args.self_test,
                                         seed=args.seed, window=args.window, start_only=args.start_only,
                                         stated_noise=[dict(n) for n in noise])
            stages.done(f"refitted {args.self_test} simulated repeats")
    finally:
        problem.close()
    lines = outputs.sentences(result)
    for line in lines:
        print(line)
    print(f"  intervals: {result.intervals['checked']}")
    if coverage is not None:
        lines.append(coverage.text().strip())
        print(coverage.text())
        for sentence in coverage.contradicted:
            lines.append(f"the self-test contradicts the stated 95 %: {sentence}")
            print(lines[-1])
    verdicts, missed = {}, []
    for kind, group, noises in (("fitted", logs, noise), ("validation", validation_logs, validation_noise)):
        for log, n in zip(group, noises, strict=True):
            verdict = judge_fitted(path, result, [log], noise=[n], start_only=args.start_only, window=args.window,
                                   tolerance=tolerance, commands=args.commands, start=args.start)
            verdicts[str(log.path)] = {"role": kind, **verdict.as_json()}
            stages.done(f"the fitted model against {log.path.name}: {verdict.verdict}")
            if verdict.verdict == "fail":
                missed.append((log, verdict))
    plots = []
    for li, log in enumerate(logs):
        name = f"identify-{li + 1}-{Path(log.path).stem}.png"
        outputs.plot_signals(out / name, log.time, measured[li], nominal[li], identified[li], Path(log.path).name)
        plots.append(name)
    validation: dict = {}
    if validation_logs:
        replayed = {}
        for label, fitted in (("before", False), ("after", True)):
            v_problem = Problem(problem.spec, _refitted(targets, result, fitted), validation_logs,
                                window=args.window, noise=validation_noise, start_only=args.start_only,
                                commands=args.commands, start=args.start)
            try:
                xv = v_problem.refine_starts(v_problem.x0())
                _, rms = v_problem.rms(xv)
                replayed[label] = v_problem.predictions(xv)
                measured_v = [{s.key: s.measured for s in sigs} for sigs in v_problem.signals]
            finally:
                v_problem.close()
            for log, signals in rms.items():
                for key, value in signals.items():
                    validation.setdefault(log, {}).setdefault(key, {})[label] = value
        for li, log in enumerate(validation_logs):
            name = f"validate-{li + 1}-{Path(log.path).stem}.png"
            outputs.plot_signals(out / name, log.time, measured_v[li], replayed["before"][li], replayed["after"][li],
                                f"{Path(log.path).name} (validation: replayed, not fitted)")
            plots.append(name)
        for log, signals in validation.items():
            for key, v in signals.items():
                print(f"validation {Path(log).name}: {key} off by {v['after']:.3g} x its noise (RMS) with the "
                      f"identified model, {v['before']:.3g} x with the model")
    for log, verdict in missed:
        worst = verdict.worst
        how = (f"by {worst['rms']:.3g} x its noise ({worst['signal']})" if worst["rms"] > worst["limit"]
               else "beyond its noise")
        lines.append(f"the fitted model still misses {log.path.name} {how}: something outside --fit is wrong")
        print(lines[-1])
        for line in verdict.text.splitlines()[1:]:
            if not line.strip().startswith(("noise:", "this log could catch")):
                lines.append(line)
                print(line)
    table_noise = {k: v.as_json() for k, v in noise[0].items()}
    content = outputs.as_json(result, model=path, logs=[str(log.path) for log in logs], validation=validation,
                             window=args.window, noise=table_noise, verdicts=verdicts)
    if coverage is not None:
        content["self_test"] = coverage.as_json()
    write_json(out / "identified.json", content)
    outputs.write_xml(path, result, model, out)
    command = "crossdyn " + " ".join(shlex.quote(a) for a in getattr(args, "argv", sys.argv[1:]))
    outputs.write_html(out / "index.html", title=f"identify {path.name}", command=command, lines=lines,
                      table=content["parameters"], residuals=content["residuals"], validation=validation, plots=plots)
    stages.done(f"results in {out}")
    stages.close()
    print(f"  fitted in {result.seconds:.1f} s; results in {out}")
    return 1 if missed or (coverage is not None and coverage.contradicted) else 0


def _refitted(targets, result, fitted: bool):
    """The targets as fixed values for a replay: the fitted ones (``fitted``) or the model's."""
    out = []
    for t, v, ok in zip(targets, result.value, result.identified, strict=True):
        value = v if fitted and ok else t.nominal
        out.append(Quantity(t.spec, t.kind, t.element, t.attr, value, value - 1, value + 1, t.scale, t.unit,
                          t.parameter))
    return out


def _cmd_excite(args) -> int:
    path = model_path(args.mjcf)
    model = load_model(path)

    spec = mujoco.MjSpec.from_file(str(path))
    if model.nu == 0:
        raise ParameterError(f"{path.name} has no actuators: nothing to command")
    if args.out.suffix not in (".csv", ".npz"):
        raise ParameterError(f"--out {args.out}: a command file is .csv or .npz")
    targets = parse_fit(args.fit, model, spec, path.name) if args.fit else []
    time, ctrl, qpos, scale = design(model, args.duration, args.seed)
    if not np.all(np.isfinite(qpos)):
        raise ParameterError(f"{path.name}: the model's simulation diverges under any excitation tried")
    make_out_dir(args.out.parent)
    columns = {f"ctrl:{model.actuator(a).name}": ctrl[:, a] for a in range(model.nu)}
    write_log(args.out, time, columns)
    print(f"{model.nu} commands, {args.duration:g} s, amplitude {scale:.0%} of the design's (half of each "
          f"ctrlrange; 10 rad/s^2 for an unlimited motor): {args.out}")
    if targets:
        joints = [model.joint(j).name for j in range(model.njnt)
                  if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))]
        log = Log(path=args.out, time=time, columns={})
        for a in range(model.nu):
            log.signals[f"ctrl:{model.actuator(a).name}"] = ("ctrl", model.actuator(a).name, ctrl[:, a:a + 1],
                                                             np.array([a]))
        for name in joints:
            adr = model.jnt_qposadr[model.joint(name).id]
            log.signals[f"qpos:{name}"] = ("qpos", name, qpos[:, adr:adr + 1], np.array([adr]))
        for d in determinacy(spec, targets, log, args.noise):
            print(d.sentence())
    return 0


def _cmd_check_model(args) -> int:
    # A run refused or stopped before its verdict leaves no earlier run's verdict behind to be read as its own.
    if args.out.is_dir():
        for old in [args.out / "check-model.json", *args.out.glob("check-model-*.png")]:
            old.unlink(missing_ok=True)
    parse_tolerance(args.tolerance or None)  # refused before any work
    path, model, spec, logs = _load(args.mjcf, args.log)
    refuse_repeats(logs)
    out = make_out_dir(args.out)
    bar = None
    if args.self_test is not None and sys.stdout.isatty():
        bar = tqdm(total=None, desc="self-test", unit="check", leave=False)
    try:
        verdict = replay(spec, logs, tolerance=args.tolerance or None, window=args.window, noise=args.noise,
                         detect=args.detect, start_only=args.start_only, self_test=args.self_test, seed=args.seed,
                         commands=args.commands, start=args.start,
                         progress=(lambda done: bar.update(done - bar.n)) if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    print(verdict.text)
    write_json(out / "check-model.json", verdict.as_json())
    for li, (log, (measured, predicted)) in enumerate(zip(logs, verdict.traces, strict=True)):
        plot_signals(out / f"check-model-{li + 1}-{log.path.stem}.png", log.time, measured, predicted, None,
                     f"{log.path.name}: measured and the model ({verdict.verdict})")
    return 0 if verdict.passed else 1


def _cmd_record(args) -> int:
    path = model_path(args.mjcf)
    model = load_model(path)
    if model.nu == 0:
        raise ParameterError(f"{path.name} has no actuators: nothing to command")
    if args.out.suffix not in (".csv", ".npz"):
        raise ParameterError(f"--out {args.out}: a log is .csv or .npz")
    qpos = None
    if args.keyframe is not None:
        kid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, args.keyframe)
        if kid < 0:
            names = [model.key(k).name for k in range(model.nkey)]
            raise ParameterError(f"--keyframe {args.keyframe}: {path.name} has no such keyframe "
                                 f"({', '.join(names) or 'none'})")
        qpos = model.key_qpos[kid].copy()
    controller = load_derivation(args.controller) if args.controller else None
    time, columns = record(model, controller, args.duration, commands=args.commands, noise=args.noise,
                           delay=args.delay, seed=args.seed, qpos=qpos, signals=args.signals)
    make_out_dir(args.out.parent)
    write_log(args.out, time, columns)
    stated = " ".join(f"--noise {shlex.quote(n)}" for n in args.noise)
    print(f"{time.size} samples of {len(columns) - model.nu} readings and {model.nu} commands, {args.duration:g} s: "
          f"{args.out}" + (f"; identify and check model take the noise as stated: {stated}" if stated else ""))
    return 0
