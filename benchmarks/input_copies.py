"""What giving the user's function copies of the states costs a check.

Every part check and ``check derivation`` hands the user's function copies of
the states and compares them afterwards (a function that writes into its input
is told so, never compared at the state it overwrote).  This prints, for the
worst case (a function written for one state, so one call per state and per
term) and a batched one, the check's wall time with the copies and with them
switched off (the arrays passed as they are), and the ratio.  Best of a few
repeats, since the machine is shared.

    python benchmarks/input_copies.py [--samples N] [--repeats R]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from crossdyn import check_derivation, check_mass_matrix, load_model
from crossdyn.experiments.core import user_code
from timing import best_time, command_line  # benchmarks/timing.py (the script folder is on sys.path)

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "derivations"))
import two_link_user  # noqa: E402  (a user's closed-form two-link dynamics, one state or a batch)


def _as_given(args: tuple) -> tuple:
    """The copies switched off: the arrays as they are."""
    return args


def _untouched(label: str, names: tuple[str, ...], originals: tuple, given: tuple) -> None:
    """The comparison switched off."""


def main() -> None:
    args = command_line(__doc__, 3, samples=2000).parse_args()
    model = load_model("two_link_arm")
    cases = {
        "check derivation, one state per call": lambda: check_derivation(two_link_user.correct, model,
                                                                         samples=args.samples),
        "check derivation, batched": lambda: check_derivation(two_link_user.correct_batch, model,
                                                              samples=args.samples),
        "check mass-matrix, one state per call": lambda: check_mass_matrix(
            lambda q: np.array([[1.0 + np.cos(q[1]), 0.5], [0.5, 1.0]]), model, samples=args.samples),
    }
    copies, refuse = user_code.given_copies, user_code.refuse_writes
    print(f"{args.samples} states, best of {args.repeats}")
    for name, run in cases.items():
        with_copies, _ = best_time(run, args.repeats)
        user_code.given_copies, user_code.refuse_writes = _as_given, _untouched
        try:
            without, _ = best_time(run, args.repeats)
        finally:
            user_code.given_copies, user_code.refuse_writes = copies, refuse
        print(f"  {name:40s} {with_copies:7.3f} s with copies, {without:7.3f} s without: "
              f"x{with_copies / without:.2f}")


if __name__ == "__main__":
    main()
