"""The ``crossdyn`` command line: ``list``, ``run``, ``check``, ``tune``, ``identify``, ``gains``, ``margins`` and the
systems' own.

Exit status: 0 when everything is as expected, 1 when a check or an experiment's expected
outcome fails, 2 for bad input, always with a one-line message and no traceback.  Each
command lives in its own module, its options' types from :mod:`.arguments`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from .. import user_code
from ..errors import CrossdynError
from ..safe_text import one_line

__all__ = ["main", "console", "build_parser"]

# Characters of a one-line error on the terminal (user text in it can be any length).
ERROR_LIMIT = 1000


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``PROG: error: MESSAGE (see PROG --help)``, exit 2), not the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    # Late: the commands import MuJoCo and matplotlib, which read MUJOCO_GL and MPLBACKEND (set by main).
    from . import check, gains, identify, margins, run, tune

    parser = _Parser(
        prog="crossdyn",
        description="Cross-check hand-derived robot dynamics and controllers against MuJoCo.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_list_parser(sub)
    check.add_parser(sub)
    run.add_parser(sub)
    tune.add_parser(sub)
    identify.add_parser(sub)
    gains.add_parser(sub)
    margins.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``crossdyn`` console script; returns the exit status."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    if argv is None:
        argv = sys.argv[1:]
    if "--video" in argv:
        os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede importing mujoco

    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(argv)  # the command line, as the HTML report shows it

    try:
        return args.func(args)
    except CrossdynError as exc:
        print(f"crossdyn: error: {one_line(exc, ERROR_LIMIT)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("crossdyn: interrupted; finished experiments' results are kept", file=sys.stderr)
        return 130
    except OSError as exc:
        # A path the machine refuses that no validator foresaw: still the user's input, still one line.
        path = exc.filename2 or exc.filename  # a rename names its destination second
        where = f"{path}: " if path is not None else ""
        print(f"crossdyn: error: {one_line(f'{where}{exc.strerror or exc}', ERROR_LIMIT)}", file=sys.stderr)
        return 2


def console() -> None:
    """The ``crossdyn`` console script: :func:`main`, then exit with its status.

    After a user's file was imported (``--from``), the exit is ``os._exit`` after
    flushing: their ``atexit`` handlers and non-daemon threads cannot change or delay it.
    """
    code = main()
    if user_code.LOADED_HERE:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console()
