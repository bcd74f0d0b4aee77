"""``crossdyn gains``: an experiment's gain schedule ``K(l)`` as a C header for firmware.

    crossdyn gains --experiment NAME --out gains.h [--name C_NAME] [--set KEY=VALUE ...] [--from FILE.py]

The experiment declares what it designs (``experiment(..., gains=Gains(design, name))``); the header is
:meth:`~crossdyn.controllers.lqr.GainSchedule.to_c`'s: the fitted polynomials and the table, in float,
with the state and input order in a comment.
"""

from __future__ import annotations

import re

from ....controllers.lqr import GainSchedule
from .. import user_code
from ..errors import CrossdynError, ParameterError
from ..files import make_out_dir
from ..registry import experiments, get
from ..user_code import where
from . import arguments

__all__ = ["add_parser"]


def _cmd_gains(args) -> int:
    if args.sources:
        user_code.LOADED_HERE = True  # its atexit handlers and threads must not decide crossdyn's exit
        experiments(args.sources)
    exp = get(args.experiment)
    if exp.gains is None:
        with_gains = [name for name, e in experiments().items() if e.gains is not None]
        raise ParameterError(f"experiment {exp.name!r} designs no gain schedule to export (those that do: "
                             f"{', '.join(with_gains) or 'none'})")
    name = args.name or exp.gains.name
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ParameterError(f"--name {name!r} is not a C identifier")
    params = exp.resolve_params(dict(args.set))
    try:
        gains = exp.gains.design(params)
    except CrossdynError:
        raise
    except Exception as exc:  # the experiment's design code (a user's, with --from): one line, never a traceback
        raise ParameterError(f"experiment {exp.name!r}'s gain design raised {type(exc).__name__}: {exc}"
                             f"{where(exc)}") from None
    if not isinstance(gains, GainSchedule):
        raise ParameterError(f"experiment {exp.name!r}'s gain design returned a {type(gains).__name__}, not a "
                             "GainSchedule")
    make_out_dir(args.out.parent)
    gains.to_c(args.out, name)
    nu, nx = gains.coeffs.shape[1:]
    print(f"gains of {exp.name}: K ({nu}, {nx}) over {len(gains.lengths)} leg lengths {gains.lengths[0]:.3g} to "
          f"{gains.lengths[-1]:.3g} m, degree-{gains.coeffs.shape[0] - 1} fit within {gains.fit_error:.1e} of each "
          f"entry; wrote {args.out} ({name}_coeffs, {name}_lengths, {name}_table)")
    return 0


def add_parser(sub) -> None:
    """Add ``gains`` to the ``crossdyn`` subcommands."""
    p = sub.add_parser("gains", help="write an experiment's gain schedule K(l) as a C header for firmware")
    p.add_argument("--experiment", required=True, metavar="NAME",
                   help="the experiment whose design to export ('crossdyn list'; e.g. biped-free-hip)")
    p.add_argument("--out", type=arguments.out_file, required=True, metavar="FILE.h", help="the header to write")
    p.add_argument("--name", metavar="C_NAME",
                   help="the prefix of the header's identifiers (default: the one the experiment's firmware uses)")
    p.add_argument("--set", type=arguments.key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="set an experiment parameter (repeatable; see 'crossdyn list')")
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="FILE.py|MODULE",
                   help="also load the experiments registered in a Python file or an importable module")
    p.set_defaults(func=_cmd_gains)
