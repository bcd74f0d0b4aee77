"""Simulated seconds per wall second: the serial loop, the batch on 1..N threads, and mujoco.rollout.

The cart-pole (RK4, 2 ms step) balanced by its LQR from tilted starts, one control
step per physics step:

- ``simulate``, one run after another in this process;
- ``simulate_batch`` of ``--sims`` runs on 1, 2, ... ``--threads`` threads;
- ``mujoco.rollout`` of the same physics open loop (the batch's controls replayed),
  the bare engine's rate on as many threads;
- a robustness map of ``--map-runs`` runs under imperfections (a grid of the pole's
  mass scale and the motor's lag, sensor noise seeded per run), batched in chunks of
  ``--sims``, end to end: the imperfections bound, the loops run, each run judged.

Wall time, best of ``--repeats``.  Printed on whatever machine runs it; the
numbers in docs/guides/speed.md came from here.

    python benchmarks/batch_speed.py [--sims 256] [--duration 2] [--threads N] [--map-runs 10000]
"""

from __future__ import annotations

import argparse
import os
import time

import mujoco
import numpy as np
from mujoco import rollout

from crossdyn.experiments.cart_pole import design
from crossdyn.experiments.core.imperfections import ActuatorLag, MassScale, SensorNoise
from crossdyn.experiments.core.loop.batch import simulate_batch
from crossdyn.experiments.core.loop.simulate import simulate
from crossdyn.experiments.core.models import load_model
from timing import best_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=256, help="simulations per batch")
    parser.add_argument("--duration", type=float, default=2.0, help="simulated s per run")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="the most threads tried")
    parser.add_argument("--serial-runs", type=int, default=8)
    parser.add_argument("--map-runs", type=int, default=10_000, help="runs of the robustness map (0: none)")
    parser.add_argument("--map-duration", type=float, default=1.0, help="simulated s per map run")
    parser.add_argument("--map-threads", type=int, default=0, help="the map's threads (0: --threads)")
    parser.add_argument("--map-only", action="store_true", help="only the robustness map")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    model = load_model("cart_pole")
    reg = design({})
    h = float(model.opt.timestep)
    rng = np.random.default_rng(0)
    starts = np.column_stack([np.zeros(args.sims), rng.uniform(-0.2, 0.2, args.sims)])
    simulated = args.sims * args.duration
    if args.map_only:
        robustness_map(model, reg, args, args.map_threads or args.threads)
        return
    print(f"cart-pole LQR, RK4 {h * 1e3:g} ms, {args.duration:g} s runs; simulated s per wall s (best of "
          f"{args.repeats}); {os.cpu_count()} CPUs")

    serial_starts = starts[:args.serial_runs]
    wall, _ = best_time(lambda: [simulate(model, reg, args.duration, keyframe="upright", qpos=q)
                                 for q in serial_starts], args.repeats)
    serial = len(serial_starts) * args.duration / wall
    print(f"  simulate(), one run after another           {serial:9.0f}")

    threads = list(range(1, args.threads + 1))
    traces = None
    for n in threads:
        def batched(n: int = n) -> list:
            return simulate_batch(model, reg, args.duration, n=args.sims, keyframe="upright", qpos=starts, nthread=n)

        wall, traces = best_time(batched, args.repeats)
        print(f"  simulate_batch(), {args.sims} sims, {n} thread(s)     {simulated / wall:9.0f}"
              f"   ({simulated / wall / serial:.2f}x serial)")

    assert traces is not None
    controls = np.stack([t.ctrl for t in traces])  # (sims, steps, nu): the closed loops' controls, replayed
    data = mujoco.MjData(model)
    initial = np.empty((args.sims, mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
    for k, q in enumerate(starts):
        mujoco.mj_resetDataKeyframe(model, data, model.key("upright").id)
        data.qpos[:] = q
        mujoco.mj_getState(model, data, initial[k], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    for n in sorted({1, threads[-1]}):
        datas = [mujoco.MjData(model) for _ in range(n)]

        def replay(datas: list = datas) -> None:
            rollout.rollout(model, datas, initial, controls)

        wall, _ = best_time(replay, args.repeats)
        print(f"  mujoco.rollout (open loop), {n} thread(s)       {simulated / wall:9.0f}")

    if args.map_runs:
        robustness_map(model, reg, args, args.map_threads or threads[-1])


def robustness_map(model, reg, args, nthread: int) -> None:
    """A grid of pole mass scale x motor lag, sensor noise seeded per run; balanced: the pole within 0.5 rad."""
    side = int(round(np.sqrt(args.map_runs)))
    scales, lags = np.meshgrid(np.linspace(0.5, 2.0, side), np.linspace(0.001, 0.05, side))
    mixes = [[MassScale("pole", float(s)), ActuatorLag("push", float(tau)), SensorNoise("pole_angle", std=1e-3)]
             for s, tau in zip(scales.ravel(), lags.ravel(), strict=True)]
    start = [0.0, 0.1]
    begin = time.perf_counter()
    passed = 0
    for first in range(0, len(mixes), args.sims):
        chunk = mixes[first:first + args.sims]
        traces = simulate_batch(model, reg, args.map_duration, keyframe="upright", qpos=start, imperfections=chunk,
                                seeds=list(range(first, first + len(chunk))), nthread=nthread)
        passed += sum(t.stopped is None and np.abs(t.qpos[:, 1]).max() < 0.5 for t in traces)
    wall = time.perf_counter() - begin
    some = mixes[:: max(1, len(mixes) // 16)]
    begin = time.perf_counter()
    for k, mix in enumerate(some):
        simulate(model, reg, args.map_duration, keyframe="upright", qpos=start, imperfections=mix, seed=k)
    serial = (time.perf_counter() - begin) / len(some) * len(mixes)
    print(f"robustness map, {len(mixes)} runs of {args.map_duration:g} s ({side} x {side}: pole mass x motor lag, "
          f"sensor noise), {passed} balanced:")
    rate = len(mixes) * args.map_duration / wall
    print(f"  batched on {nthread} thread(s), end to end     {wall:7.1f} s   ({rate:.0f} simulated s per wall s)")
    print(f"  simulate() one after another (estimated from {len(some)} runs)  {serial:7.1f} s")


if __name__ == "__main__":
    main()
