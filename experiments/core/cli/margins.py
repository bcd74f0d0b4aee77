"""``crossdyn margins EXPERIMENT``: the loop's gain and phase margins measured in MuJoCo beside the design's.

Usage::

    crossdyn margins cart-pole-lqr [--actuator NAME] [--delay PERIODS] [--method multisine|sines] [--short]
                                   [--set KEY=VALUE] [--out DIR]

Breaks the experiment's loop at its plant input (or ``--actuator``), injects a multisine
or stepped sines with the run's imperfections in place
(:func:`~crossdyn.experiments.core.margins.measure_loop`), prints the margins measured
beside designed, and writes ``DIR/margins.json`` (``gain_margin_db``, ``phase_margin_deg``,
``crossover_rad_s``, ``delay_margin_s``, each ``measured`` and ``designed``), ``DIR/bode.png``
and ``DIR/index.html``.  Exit 0; 1 when a run is no measurement of the loop (it fell, saturated,
grew, or two amplitudes disagree); 2 for bad input.  A line per finished run on a log, a bar on
a terminal.
"""

from __future__ import annotations

import html
import sys
from pathlib import Path

from .. import user_code
from ..errors import ParameterError
from ..figures import save
from ..files import make_out_dir, write_json, write_text
from ..imperfections import Delay
from ..limits import ADDED_DELAY_MAX
from ..margins import measure_setup, registered_loops
from ..registry import experiments, get
from . import arguments

__all__ = ["add_parser", "DEFAULT_OUT"]

DEFAULT_OUT = Path("results") / "margins"


def add_parser(sub) -> None:
    """Add ``margins`` to the top-level subcommands."""
    p = sub.add_parser("margins", help="measure a loop's gain and phase margins in MuJoCo beside the design's",
                       description="Break the experiment's loop at the plant input (each actuator in turn, the "
                                   "others closed), inject a multisine (or stepped sines) with its imperfections in "
                                   "place, estimate the loop transfer function per frequency and report the gain "
                                   "and phase margins, the crossover and the delay margin, measured beside "
                                   "designed. Writes margins.json, bode.png and index.html. Exit 0; 1 when a run "
                                   "is no measurement of the loop (it fell, saturated, grew, or its two amplitudes "
                                   "disagree: said why); 2 for bad input.")
    p.add_argument("experiment", metavar="EXPERIMENT", help="an experiment with a loop to measure (e.g. "
                                                             "cart-pole-lqr)")
    p.add_argument("--actuator", default=None, help="break the loop only at this actuator")
    p.add_argument("--delay", type=arguments.count(0, ADDED_DELAY_MAX, "--delay"), default=0,
                   help="add a Delay of this many control periods to the run (default 0)")
    p.add_argument("--method", choices=("multisine", "sines"), default="multisine",
                   help="one multisine run per loop (default), or one sine run per frequency")
    p.add_argument("--short", action="store_true", help="fewer frequencies (as the tests and the gallery do)")
    p.add_argument("--set", action="append", default=[], type=arguments.key_value, metavar="KEY=VALUE",
                   help="an experiment parameter (see 'crossdyn list')")
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="FILE.py|MODULE",
                   help="also load the experiments and loops (register_loop) a Python file or module registers")
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, help="output folder (default "
                                                                             "results/margins)")
    p.set_defaults(func=_cmd_margins)


def _cmd_margins(args) -> int:
    if args.sources:
        user_code.LOADED_HERE = True  # its atexit handlers and threads must not decide crossdyn's exit
    experiments(args.sources)  # registers every built-in experiment and its loop, and the user's
    loops = registered_loops()
    if args.experiment not in loops:
        get(args.experiment)  # an unknown name: the registry's own message, with the known ones
        raise ParameterError(f"experiment {args.experiment!r} has no loop to measure; the ones that have: "
                             f"{', '.join(sorted(loops)) or 'none'}")
    params = get(args.experiment).resolve_params(dict(args.set))
    setup = loops[args.experiment](params, args.short)
    progress = _Progress(sys.stderr)
    measurement = measure_setup(setup, imperfections=[Delay(args.delay)] if args.delay else [],
                                actuator=args.actuator, method=args.method, progress=progress)
    progress.close()
    out = make_out_dir(args.out)
    title = f"{args.experiment}: loop margins" + (f" with a {args.delay}-period delay" if args.delay else "")
    data = {"experiment": args.experiment, "params": params, "delay_periods": args.delay, **measurement.to_json()}
    write_json(out / "margins.json", data)

    save(measurement.plot(title), out, "bode.png")
    write_text(out / "index.html", _page(title, measurement))
    for line in measurement.sentences():
        print(line)
    print(f"wrote {out / 'margins.json'}, {out / 'bode.png'}, {out / 'index.html'}")
    return 0 if measurement.valid else 1


class _Progress:
    """A bar on a terminal, else a line per finished run."""

    def __init__(self, stream):
        self.stream, self.bar = stream, stream.isatty()

    def __call__(self, done: int, total: int, what: str) -> None:
        if self.bar:
            filled = int(30 * done / total)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {what[:40]:40}")
        else:
            self.stream.write(f"margins: {done}/{total} measured ({what})\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar:
            self.stream.write("\n")


def _page(title: str, measurement) -> str:
    """The HTML report: measured beside designed per loop, the sentences, the Bode plot."""
    e = html.escape
    rows = []
    for loop in measurement.loops:
        for key, label in (("phase_margin_deg", "phase margin, deg"), ("crossover_rad_s", "crossover, rad/s"),
                           ("gain_margin_db", "gain margin, dB"), ("delay_margin_s", "delay margin, s")):
            measured = getattr(loop.margins, key)
            designed = None if loop.design_margins is None else getattr(loop.design_margins, key)
            rows.append(f"<tr><td>{e(loop.actuator)}</td><td>{e(label)}</td><td>{_cell(measured)}</td>"
                        f"<td>{_cell(designed)}</td></tr>")
    notes = "".join(f"<li>{e(line)}</li>" for line in measurement.sentences())
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>{e(title)}</title>"
            "<style>body{font-family:sans-serif;margin:1.5em;max-width:80em}table{border-collapse:collapse}"
            "td,th{border:1px solid #bbb;padding:.25em .6em}img{max-width:100%}</style></head>\n<body>\n"
            f"<h1>{e(title)}</h1>\n<table><tr><th>loop</th><th>margin</th><th>measured in MuJoCo</th>"
            f"<th>designed</th></tr>\n{''.join(rows)}\n</table>\n<ul>{notes}</ul>\n"
            "<img src=\"bode.png\" alt=\"Bode plot: measured and designed loop\">\n</body>\n</html>\n")


def _cell(value) -> str:
    return "none (no crossing)" if value is None else f"{value:.4g}"
