"""``crossdyn identify``, ``crossdyn check model`` and ``crossdyn excite``: is the MJCF the robot?

Usage::

    crossdyn identify --mjcf M --log L [--log L2 ...] --fit QUANTITY [--fit ...] [--validate V ...]
                      [--window S] [--out DIR]
    crossdyn check model --mjcf M --log L [--log L2 ...] [--tolerance X] [--window S] [--out DIR]
    crossdyn excite --mjcf M --duration S --out cmd.csv [--fit QUANTITY ...] [--noise RAD] [--seed N]

``identify`` fits what ``--fit`` names (:mod:`crossdyn.experiments.core.identify.spec`)
to the logs (:mod:`crossdyn.experiments.core.identify.fit`), prints one sentence per
parameter and writes ``identified.json``, ``identified.xml``, a plot per log and
``index.html`` into ``DIR``.  ``check model`` replays the logs with the model as it
is and exits 0 when every reading stays within its log's own noise, 1 when one does
not (naming it, how far and from when), 2 for bad input.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from crossdyn.experiments.core.cli import arguments

__all__ = ["add_parser", "configure_check_model", "DEFAULT_OUT"]

DEFAULT_OUT = Path("results")
# Shortest and longest re-anchored window, s: a few steps of any model, and far past where a rollout
# of an unstable robot still says anything.
WINDOW_MIN, WINDOW_MAX = 0.005, 60.0
# Longest excitation, s: an hour of commands at 1 kHz is 3.6 million rows.
DURATION_MAX = 3600.0


def _window(p: argparse.ArgumentParser) -> None:
    from crossdyn.experiments.core.identify.fit import WINDOW

    p.add_argument("--window", type=arguments.number(WINDOW_MIN, WINDOW_MAX, "--window"), default=WINDOW,
                   help=f"seconds per rollout re-anchored to the log's state (default {WINDOW})")


def add_parser(sub) -> None:
    """Add ``identify`` to the top-level subcommands."""
    p = sub.add_parser("identify", help="fit a model's parameters to a robot's logs (mujoco.sysid)",
                       description="Fit what --fit names to the logs: one sentence per parameter, identified.json, "
                                   "identified.xml (the MJCF with only the fitted values changed), plots, index.html."
                                   " Exit 0, or 2 for bad input.")
    p.add_argument("--mjcf", required=True, help="the model (MJCF path or built-in name)")
    p.add_argument("--log", action="append", required=True, metavar="LOG",
                   help="a log, .csv or .npz (time, ctrl:<actuator>, qpos:<joint>, qvel:<joint>, sensor:<sensor>); "
                        "repeat for several")
    p.add_argument("--fit", action="append", required=True, metavar="QUANTITY",
                   help="what may change: body:<name>:mass|com|inertia, joint:<name>:damping|armature|frictionloss|"
                        "stiffness, actuator:<name>:gear, delay, sensor:<name>:bias (globs allowed); repeat")
    p.add_argument("--validate", action="append", default=[], metavar="LOG",
                   help="a log replayed with the fitted model and reported, not fitted; repeat")
    _window(p)
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


def configure_check_model(p: argparse.ArgumentParser) -> None:
    """does this model reproduce this robot's log? (exit 0 yes, 1 no, naming the reading)"""
    from crossdyn.experiments.core.identify.check_model import TOLERANCE

    p.description = ("Replay the logs with the model as it is, each window started from the log's state: exit 0 "
                     "when every reading stays within its log's own noise, 1 when one does not, 2 for bad input.")
    p.add_argument("--mjcf", required=True, help="the model (MJCF path or built-in name)")
    p.add_argument("--log", action="append", required=True, metavar="LOG", help="a log (.csv or .npz); repeat")
    p.add_argument("--tolerance", type=arguments.number(1.0, 1e6, "--tolerance", low_open=True), default=TOLERANCE,
                   help=f"largest RMS error, in units of the reading's own noise (default {TOLERANCE})")
    _window(p)
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, help="output folder (default results/)")
    p.set_defaults(func=_cmd_check_model)


def _load(mjcf: str, logs: list[str]):
    """Model, its spec, its name and the logs, all checked before anything is written."""
    import mujoco

    from crossdyn.experiments.core.identify.logs import load_log
    from crossdyn.experiments.core.models import load_model, model_path

    path = model_path(mjcf)
    model = load_model(path)
    spec = mujoco.MjSpec.from_file(str(path))
    return path, model, spec, [load_log(log, model, path.name) for log in logs]


def _cmd_identify(args) -> int:
    from crossdyn.experiments.core.identify import report
    from crossdyn.experiments.core.identify.fit import Problem, fit_and_replay
    from crossdyn.experiments.core.identify.spec import parse_fit
    from crossdyn.experiments.core.results import write_json

    path, model, spec, logs = _load(args.mjcf, args.log)
    validation_logs = [log for log in _load(str(path), args.validate)[3]] if args.validate else []
    targets = parse_fit(args.fit, model, spec, path.name)
    out = arguments.make_out_dir(args.out)
    problem = Problem(spec, targets, logs, window=args.window)
    result, measured, nominal, identified = fit_and_replay(problem)
    lines = report.sentences(result)
    for line in lines:
        print(line)
    plots = []
    for li, log in enumerate(logs):
        name = f"identify-{li + 1}-{Path(log.path).stem}.png"
        report.plot_signals(out / name, log.time, measured[li], nominal[li], identified[li], Path(log.path).name)
        plots.append(name)
    validation: dict = {}
    if validation_logs:
        replayed = {}
        for label, fitted in (("before", False), ("after", True)):
            v_problem = Problem(problem.spec, _refitted(targets, result, fitted), validation_logs, window=args.window)
            xv = v_problem.refine_starts(v_problem.x0())
            _, rms = v_problem.rms(xv)
            for log, signals in rms.items():
                for key, value in signals.items():
                    validation.setdefault(log, {}).setdefault(key, {})[label] = value
            replayed[label] = v_problem.predictions(xv)
            measured_v = [{s.key: s.measured for s in sigs} for sigs in v_problem.signals]
            v_problem.close()
        for li, log in enumerate(validation_logs):
            name = f"validate-{li + 1}-{Path(log.path).stem}.png"
            report.plot_signals(out / name, log.time, measured_v[li], replayed["before"][li], replayed["after"][li],
                                f"{Path(log.path).name} (validation: replayed, not fitted)")
            plots.append(name)
        for log, signals in validation.items():
            for key, v in signals.items():
                print(f"validation {Path(log).name}: {key} off by {v['after']:.3g} x its noise (RMS) with the "
                      f"identified model, {v['before']:.3g} x with the model")
    content = report.as_json(result, model=path, logs=[str(log.path) for log in logs], validation=validation,
                             window=args.window)
    write_json(out / "identified.json", content)
    report.write_xml(path, result, model, out)
    command = "crossdyn " + " ".join(shlex.quote(a) for a in getattr(args, "argv", sys.argv[1:]))
    report.write_html(out / "index.html", title=f"identify {path.name}", command=command, lines=lines,
                      table=content["parameters"], residuals=content["residuals"], validation=validation, plots=plots)
    problem.close()
    print(f"  fitted in {result.seconds:.1f} s; results in {out}")
    return 0


def _refitted(targets, result, fitted: bool):
    """The targets as fixed values for a replay: the fitted ones (``fitted``) or the model's."""
    from crossdyn.experiments.core.identify.spec import Quantity

    out = []
    for t, v, ok in zip(targets, result.value, result.identified, strict=True):
        value = v if fitted and ok else t.nominal
        out.append(Quantity(t.spec, t.kind, t.element, t.attr, value, value - 1, value + 1, t.scale, t.unit,
                          t.parameter))
    return out


def _cmd_excite(args) -> int:
    import numpy as np

    from crossdyn.experiments.core.errors import ParameterError
    from crossdyn.experiments.core.identify.excite import design, determinacy
    from crossdyn.experiments.core.identify.logs import Log, write_log
    from crossdyn.experiments.core.identify.spec import parse_fit
    from crossdyn.experiments.core.models import load_model, model_path

    path = model_path(args.mjcf)
    model = load_model(path)
    import mujoco

    spec = mujoco.MjSpec.from_file(str(path))
    if model.nu == 0:
        raise ParameterError(f"{path.name} has no actuators: nothing to command")
    if args.out.suffix not in (".csv", ".npz"):
        raise ParameterError(f"--out {args.out}: a command file is .csv or .npz")
    targets = parse_fit(args.fit, model, spec, path.name) if args.fit else []
    time, ctrl, qpos, scale = design(model, args.duration, args.seed)
    if not np.all(np.isfinite(qpos)):
        raise ParameterError(f"{path.name}: the model's simulation diverges under any excitation tried")
    arguments.make_out_dir(args.out.parent)
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
    from crossdyn.experiments.core.identify.check_model import replay
    from crossdyn.experiments.core.results import write_json

    path, model, spec, logs = _load(args.mjcf, args.log)
    out = arguments.make_out_dir(args.out)
    verdict = replay(spec, logs, tolerance=args.tolerance, window=args.window)
    print(verdict.text)
    write_json(out / "check-model.json", verdict.as_json())
    return 0 if verdict.passed else 1
