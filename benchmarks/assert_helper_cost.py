"""What running an assertion helper's check in a forked child costs (crossdyn.testing.assert_*).

Each ``assert_*`` runs its check in a forked child, so that a function under test
that ends its process cannot end the test run with exit status 0.  Prints, each the
best of a few repeats (on a shared machine other load only adds time):

  1. a fork that does nothing, from this process with MuJoCo and a model loaded;
  2. ``check_mass_matrix`` of the cart-pole's hand model at N states, in this
     process vs through the forked child (the difference is the fork, the pipe and
     the child's exit).

    python benchmarks/assert_helper_cost.py [--repeats R] [--samples N]
"""

from __future__ import annotations

import functools

from timing import best_time, command_line


def main() -> None:
    args = command_line(__doc__, 7, samples=200).parse_args()

    import crossdyn as api
    from crossdyn.analytic import cart_pole as cp
    from crossdyn.experiments.cart_pole import cart_pole_params
    from crossdyn.experiments.core.models import load_model
    from crossdyn.testing import _in_child

    model = load_model("cart_pole")
    params = cart_pole_params(model)

    def mass_matrix(q):
        return cp.mass_matrix(params, q)

    check = functools.partial(api.check_mass_matrix, mass_matrix, model, samples=args.samples)
    check()  # imports and caches warmed before timing
    trivial, _ = best_time(lambda: _in_child("nothing", lambda: None, (), {}), args.repeats)
    here, _ = best_time(check, args.repeats)
    forked, _ = best_time(lambda: _in_child("check_mass_matrix", check, (), {}), args.repeats)
    print(f"fork doing nothing:              {1e3 * trivial:8.1f} ms")
    print(f"check_mass_matrix, {args.samples} states:")
    print(f"  in this process                {1e3 * here:8.1f} ms")
    print(f"  in a forked child              {1e3 * forked:8.1f} ms  (x{forked / here:.2f}, "
          f"+{1e3 * (forked - here):.1f} ms per assert_* call)")


if __name__ == "__main__":
    main()
