"""``crossdyn list`` and ``crossdyn run``."""

from __future__ import annotations

import sys
from pathlib import Path

from crossdyn.experiments.core.cli import arguments

__all__ = ["add_parser", "add_list_parser"]

DEFAULT_OUT = Path("results")


def _cmd_list(args) -> int:
    from crossdyn.experiments.core.registry import experiments

    registry = experiments()
    width = max(len(name) for name in registry)
    for name, exp in registry.items():
        print(f"{name:<{width}}  {exp.summary}")
        print(f"{'':<{width}}  expected: {exp.expected}")
        for key, p in exp.params.items():
            print(f"{'':<{width}}  --set {key}={p.default}  ({p.help})")
    return 0


def _cmd_run(args) -> int:
    from crossdyn.experiments.core.registry import experiments, get
    from crossdyn.experiments.core.results import run_experiments, summary_table

    selected = [get(name) for name in args.names] if args.names else list(experiments().values())
    out = arguments.make_out_dir(args.out)
    outcomes = run_experiments(
        selected,
        out,
        short=args.short,
        seed=args.seed,
        overrides=dict(args.set),
        video=args.video,
        progress=sys.stderr.isatty(),
    )
    print(summary_table(outcomes), end="")
    failed = [o for o in outcomes if not o.passed]
    for o in failed:
        if o.error:
            print(f"{o.name}: {o.error}", file=sys.stderr)
    print(f"{len(outcomes) - len(failed)}/{len(outcomes)} as expected; results in {args.out}")
    return 0 if not failed else 1


def add_list_parser(sub) -> None:
    p_list = sub.add_parser("list", help="list the registered experiments")
    p_list.set_defaults(func=_cmd_list)


def add_parser(sub) -> None:
    """Add ``run`` to the ``crossdyn`` subcommands."""
    p_run = sub.add_parser("run", help="run registered experiments (all by default) and summarize")
    p_run.add_argument("names", nargs="*", metavar="NAME", help="experiments to run (see 'crossdyn list')")
    p_run.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, metavar="DIR",
                       help="output folder (default results/)")
    p_run.add_argument("--short", action="store_true", help="reduced runs (as the test suite does)")
    p_run.add_argument("--seed", type=arguments.seed, default=0,
                       help=f"seed for every random draw (default 0; 0 to {arguments.SEED_MAX})")
    p_run.add_argument("--set", type=arguments.key_value, action="append", default=[], metavar="KEY=VALUE",
                       help="set an experiment parameter (repeatable; see 'crossdyn list')")
    p_run.add_argument("--video", action="store_true", help="render MP4s where supported (MUJOCO_GL=egl)")
    p_run.set_defaults(func=_cmd_run)
