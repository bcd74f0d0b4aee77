"""``crossdyn tune cart-pole-lqr`` against the bare physics of its runs in ``mujoco.rollout`` on the same cores.

Each run of ``cart-pole-lqr`` (full length) designs an LQR and simulates two closed
loops of 8 s (RK4, 2 ms: 4000 steps each).  The sweep (``--samples`` Latin-hypercube
runs over two LQR weights, plus the defaults) runs on ``--workers`` processes with
plots off; its wall time is set against ``mujoco.rollout`` stepping the same number
of cart-pole steps (two 4000-step rollouts per run, replaying one closed loop's
controls: the cart-pole's step costs the same whatever the state, it has no
contacts) on as many threads.  The bound: sweep / physics <= 2, aim 1.3.  Both in
wall time and in CPU time (this process, its threads and its finished worker
processes): on a shared machine other load inflates wall times, CPU time much less.
``--alone`` runs the sweep one run at a time (as a tune with ``--timeout`` does)
instead of in batches.

    python benchmarks/sweep_speed.py [--samples 512] [--workers 2] [--alone]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout

from crossdyn.experiments.cart_pole import design
from crossdyn.experiments.common.cart_chain import balance
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.sweep.engine import TuneEngine
from crossdyn.experiments.core.sweep.experiment import tune

DURATION = 8.0  # s: cart-pole-lqr's full runs
CHUNK = 64  # rollouts per call: the state output stays small


def cpu() -> float:
    """CPU time of this process (all its threads) and of its finished, waited-for children, s."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def physics(runs: int, workers: int) -> tuple[float, float]:
    """Wall and CPU time of ``mujoco.rollout`` stepping ``runs`` x two 8 s closed loops' worth of cart-pole steps, s."""
    model = load_model("cart_pole")
    trace = balance(design({}), 0.2, DURATION, model)
    controls = np.broadcast_to(trace.ctrl, (CHUNK, *trace.ctrl.shape)).copy()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("upright").id)
    data.qpos[1] = 0.2
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state0, spec)
    initial = np.tile(state0, (CHUNK, 1))
    steps = trace.ctrl.shape[0]
    out_state = np.empty((CHUNK, steps, state0.size))
    out_sensor = np.empty((CHUNK, steps, model.nsensordata))
    datas = [mujoco.MjData(model) for _ in range(workers)]
    total = 2 * runs
    begin, begin_cpu = time.perf_counter(), cpu()
    for first in range(0, total, CHUNK):
        n = min(CHUNK, total - first)
        rollout.rollout(model, datas, initial[:n], controls[:n], state=out_state[:n], sensordata=out_sensor[:n])
    return time.perf_counter() - begin, cpu() - begin_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--alone", action="store_true", help="one run at a time, not in batches")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        begin, begin_cpu = time.perf_counter(), cpu()
        result = tune("cart-pole-lqr", Path(folder), vary=["q_angle=1:100:log", "r=0.01:1:log"],
                      samples=args.samples, plots=False, engine=TuneEngine(workers=args.workers, batch=not args.alone))
        sweep, sweep_cpu = time.perf_counter() - begin, cpu() - begin_cpu
    runs = len(result.rows)
    bare, bare_cpu = physics(runs, args.workers)
    how = "one run at a time" if args.alone else "in batches"
    print(f"crossdyn tune cart-pole-lqr: {runs} runs of 2 x {DURATION:g} s on {args.workers} worker(s), {how}")
    print(f"  the sweep, end to end                    wall {sweep:7.1f} s   CPU {sweep_cpu:7.1f} s")
    print(f"  its physics in mujoco.rollout, {args.workers} thread(s) wall {bare:7.1f} s   CPU {bare_cpu:7.1f} s")
    print(f"  ratio sweep/physics = {sweep / bare:.2f} wall, {sweep_cpu / bare_cpu:.2f} CPU (bound 2, aim 1.3)")


if __name__ == "__main__":
    main()
