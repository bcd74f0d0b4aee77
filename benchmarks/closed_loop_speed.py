"""Closed-loop overhead: the balance-recovery run vs a bare mj_step loop of the same motion.

The bare loop replays the torques the controller produced, so MuJoCo does the same
physics (contacts, loop closures) in both; the ratio is what the controller, the
state estimate and the logging add.  The issue's bound: ratio <= 2, aim 1.3.
Closed and bare runs alternate and the best of each is kept, so a burst of other
load on the shared machine inflates neither alone; the times are this process's
CPU time (``time.process_time``), which other jobs on the machine inflate less
than wall time.  Both loops step the physics
with ``mj_step(model, data, nstep)`` per control step, as ``simulate_scenario`` does.

The closed loop runs the built-in controller as one compiled step
(``crossdyn.controllers.biped.compiled``); the readable classes' own cost is printed
beside it (``simulate_scenario(..., compiled=False)``).  The last line is a user's own
controller function in place of the biped controller: a trivial one that replays the recorded torques by time (so the
physics is the bare loop's), which shows what ``simulate_scenario`` itself costs beyond
the physics and the user's function.

    python benchmarks/closed_loop_speed.py [--repeats R]
"""

from __future__ import annotations

import argparse
import time

import mujoco

from crossdyn.controllers.biped.controller import Command
from crossdyn.experiments.biped.closed_loop import initial_state, simulate_scenario
from crossdyn.experiments.biped.model import HIPS, biped_params, build
from crossdyn.experiments.biped.scenarios import CONTROL_PERIOD, balance_scenario, controller_for
from timing import best_alternating  # benchmarks/timing.py (the script folder is on sys.path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--duration", type=float, default=4.0)
    args = parser.parse_args()

    model = build()
    p = biped_params(model)
    sc = balance_scenario(10.0, args.duration)
    # Record the biped controller's commands (all four hip motors) once; the bare loop
    # and the user's function replay them, so all three runs do the same physics.
    commands, biped = [], controller_for({})

    def recording(t, est, ref):
        cmd = biped(t, est, ref)
        commands.append((cmd.wheels, cmd.hips))
        return cmd

    trace = simulate_scenario(model, sc, recording)
    steps = int(round(CONTROL_PERIOD / model.opt.timestep))
    hip_act = [model.actuator(h).id for h in HIPS]
    wheel_act = [model.actuator(f"{s}_wheel").id for s in ("left", "right")]

    def bare():
        data = mujoco.MjData(model)
        data.qpos[:] = initial_state(model, p, sc)
        mujoco.mj_forward(model, data)
        start = time.process_time()
        for wheels, hips in commands:
            data.ctrl[wheel_act] = wheels
            data.ctrl[hip_act] = hips
            mujoco.mj_step(model, data, steps)
        return time.process_time() - start

    def closed(controller, compiled=True):
        start = time.process_time()
        simulate_scenario(model, sc, controller, compiled=compiled)
        return time.process_time() - start

    def user(t, est, ref):  # a user's trivial controller: the recorded torques, looked up by time
        wheels, hips = commands[int(t / CONTROL_PERIOD + 0.5)]
        return Command(wheels, hips)

    best = best_alternating({"closed": lambda: closed(controller_for({})), "bare": bare, "user": lambda: closed(user),
                             "readable": lambda: closed(controller_for({}), compiled=False)}, args.repeats)
    c, b, u, r = (best[k] for k in ("closed", "bare", "user", "readable"))
    per_step = 1e6 / trace.t.size
    print(f"{args.duration:g} s simulated, {trace.t.size} control steps of {CONTROL_PERIOD * 1e3:g} ms, "
          f"{steps} physics steps each; CPU time, best of {args.repeats}, runs interleaved")
    print(f"  closed loop (controller + estimate + logging + physics)  {c:6.2f} s")
    print(f"  bare mj_step loop, same torques                          {b:6.2f} s  ({b * per_step:.0f} us per step)")
    print(f"  ratio closed/bare = {c / b:.2f} (bound <= 2, aim 1.3): {(c - b) * per_step:.0f} us per control "
          "step beyond the physics")
    print(f"  the same with the readable classes (compiled=False): {r:6.2f} s, ratio to bare {r / b:.2f}")
    print(f"  a user's trivial controller function: {u:6.2f} s, ratio to bare {u / b:.2f} "
          f"({(u - b) * per_step:.0f} us per step: sensors, estimate, logging)")

if __name__ == "__main__":
    main()
