"""A C controller's closed loop against a bare mj_step loop: the cart-pole's C LQR, the biped's firmware.

The C controller is the cart-pole's LQR (four products and a sum, in double),
compiled once into the scratch cache and run by ``simulate``.  Without imperfections,
``stop``, computed records or video, ``simulate`` runs it in the compiled loop
(``crossdyn.experiments.core.loop.compiled``: the steps in C, no interpreter between them);
with any of them, in the Python loop (one ctypes call into the shim per step), shown
here with a ``stop`` that never fires.  The bare loop is Python stepping the same
model for the same number of steps writing a constant control each step.  All one
physics step per control step (RK4, 2 ms: the loop's worst case).  Runs alternate
and the best of each is kept (CPU time of this process).  The aim: <= 1.2x.

The biped's firmware (``controllers/biped/firmware/biped.c``, float) runs its balance
scenario in the same loop (``experiments.biped.firmware.run_in_loop``: the fall check each
control step) against the bare physics of the same model for as many steps with the
controls held.  The issue's aim: <= 1.1x.

    python benchmarks/c_controller_speed.py [--repeats R] [--steps N]
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np

from crossdyn import CController, simulate
from crossdyn.experiments.core.models import load_model
from timing import best_alternating, command_line  # benchmarks/timing.py (the script folder is on sys.path)

LQR_C = """\
double k_x = -3.16, k_theta = -49.5, k_xd = -5.91, k_thetad = -12.8;

void step(double t, const double *qpos, const double *qvel, double *ctrl)
{
    (void)t;
    ctrl[0] = -(k_x * qpos[0] + k_theta * qpos[1] + k_xd * qvel[0] + k_thetad * qvel[1]);
}
"""


def main() -> None:
    parser = command_line(__doc__, 7)
    parser.add_argument("--steps", type=int, default=20_000, help="physics steps per run")
    args = parser.parse_args()
    model = load_model("cart_pole")
    h = model.opt.timestep
    push = np.full(1, 0.1)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        (Path(tmp) / "lqr.c").write_text(LQR_C)
        start = time.perf_counter()
        controller = CController(Path(tmp) / "lqr.c", "step", inputs=("qpos", "qvel"))
        compiled = time.perf_counter() - start

        def bare() -> float:
            data = mujoco.MjData(model)
            mujoco.mj_forward(model, data)
            begin = time.process_time()
            for _ in range(args.steps):
                data.ctrl[:] = push
                mujoco.mj_step(model, data)
            return time.process_time() - begin

        def loop() -> float:
            begin = time.process_time()
            trace = simulate(model, controller, args.steps * h, keyframe="upright", qpos=[0.0, 0.1])
            elapsed = time.process_time() - begin
            assert abs(trace.qpos[-1, 1]) < 1e-2, "the C LQR did not balance the pole"
            return elapsed

        def python_loop() -> float:  # the same controller stepped by the Python loop (a stop that never fires)
            begin = time.process_time()
            simulate(model, controller, args.steps * h, keyframe="upright", qpos=[0.0, 0.1], stop=lambda obs: None)
            return time.process_time() - begin

        def trivial() -> float:  # the loop's own cost: a Python controller returning a constant
            begin = time.process_time()
            simulate(model, lambda t, obs: push, args.steps * h, keyframe="upright")
            return time.process_time() - begin

        best = best_alternating({"loop": loop, "python": python_loop, "bare": bare, "trivial": trivial}, args.repeats)
    lo, ba, tr, py = (best[k] for k in ("loop", "bare", "trivial", "python"))
    per = 1e6 / args.steps
    print(f"cart-pole, {args.steps} physics steps of {h * 1e3:g} ms, one per control step; CPU time, best of "
          f"{args.repeats}, runs alternating (compile, once: {compiled:.2f} s)")
    print(f"  bare mj_step loop (ctrl written each step)   {ba:6.3f} s  ({ba * per:.2f} us per step)")
    print(f"  simulate() with the C LQR (compiled loop)    {lo:6.3f} s  ({lo * per:.2f} us per step)")
    print(f"  the same in the Python loop (with a stop)    {py:6.3f} s  ({py * per:.2f} us per step)")
    print(f"  simulate() with a constant Python controller {tr:6.3f} s  ({tr * per:.2f} us per step: the loop's own "
          "cost)")
    print(f"  ratio C loop/bare = {lo / ba:.2f} (aim <= 1.2): {(lo - ba) * per:.2f} us per step beyond the physics; "
          f"in the Python loop {py / ba:.2f}")
    biped(args.repeats)


def biped(repeats: int) -> None:
    """The biped's float firmware in its balance scenario against the bare physics."""
    from crossdyn.experiments.biped import closed_loop, scenarios
    from crossdyn.experiments.biped import firmware as fw

    model = scenarios.robot()
    sc = scenarios.balance_scenario(5.0, 4.0)
    per = int(round(sc.control_period / model.opt.timestep))
    n = int(round(sc.duration / sc.control_period))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        c = fw.flash(fw.firmware("float"), model, scenarios.controller_for(),
                     scenarios.stance_height(scenarios.ALPHA_NOMINAL))
        start = closed_loop.initial_state(model, closed_loop.biped_params(model), sc)

        def loop() -> float:
            begin = time.process_time()
            trace = fw.run_in_loop(model, sc, c)
            elapsed = time.process_time() - begin
            assert trace.stopped is None, "the firmware did not balance"
            return elapsed

        held = fw.run_in_loop(model, sc, c).ctrl[-1].copy()  # the balanced controls (a warm-up run), held bare

        def bare() -> float:
            data = mujoco.MjData(model)
            data.qpos[:] = start
            mujoco.mj_forward(model, data)
            begin = time.process_time()
            for _ in range(n):
                data.ctrl[:] = held
                mujoco.mj_step(model, data, per)
            return time.process_time() - begin

        best = best_alternating({"loop": loop, "bare": bare}, repeats)
    lo, ba = best["loop"], best["bare"]
    us = 1e6 / n
    print(f"biped, {n} control steps of {sc.control_period * 1e3:g} ms ({per} physics steps each); CPU time, best of "
          f"{repeats}")
    print(f"  bare physics (controls held)                 {ba:6.3f} s  ({ba * us:.1f} us per control step)")
    print(f"  simulate() with the float firmware           {lo:6.3f} s  ({lo * us:.1f} us per control step)")
    print(f"  ratio firmware loop/bare = {lo / ba:.3f} (aim <= 1.1)")


if __name__ == "__main__":
    main()
