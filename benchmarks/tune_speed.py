"""Wall time of one ``crossdyn tune biped-balance-tune`` sweep: 1 vs 2 local workers, local vs a Dask cluster.

Runs the same Latin-hypercube sweep (the experiment's declared tune; default 15
samples + the defaults = 16 balance-recovery runs of 4 s) three ways and prints

  0. one run's wall time in the 1-worker sweep (sweep wall / runs: start-up,
     compile, gain design, loop, scoring, CSV) against the bare physics of a run
     (``mj_step`` replaying the default run's torques), bound <= 1.4x, with the
     runs stepped together on MuJoCo's batch (the default) and one at a time;
  1. 2 local worker processes vs 1: speed-up, aim >= 1.7x;
  2. a local Dask cluster (2 worker processes, loopback TCP, already running as a
     user's cluster would be) vs the 2-process local pool: overhead, aim <= 1.2x;

and checks that all of them wrote the same samples.csv.  Pool and client start-up
are inside the timings, as a user pays them.  The machine is shared, so the
ratios are of single runs on whatever load there is; repeat to be sure.

    python benchmarks/tune_speed.py [--samples N] [--duration S]
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import tempfile
import time
from pathlib import Path

from crossdyn.experiments.biped.tune import BALANCE
from crossdyn.experiments.core.sweep.engine import TuneEngine
from crossdyn.experiments.core.sweep.experiment import tune


def _sweep(out: Path, args, **engine) -> None:
    tune(BALANCE, out, samples=args.samples, seed=0, fixed={"duration_s": repr(args.duration)}, plots=False,
         engine=TuneEngine(**engine))


def _timed_sweep(out: Path, args, **engine) -> float:
    start = time.perf_counter()
    _sweep(out, args, **engine)
    return time.perf_counter() - start


def _cpu_sweep(out: Path, args, batch: bool = True) -> float:
    """CPU time of the 1-worker sweep (this process and its worker), s: what other load inflates least."""

    def cpu() -> float:  # this process's and its finished, waited-for workers'
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    start = cpu()
    _sweep(out, args, workers=1, batch=batch)
    return cpu() - start


def _per_run(out: Path) -> float:
    """Mean wall time of one run inside its worker, from timings.csv, s."""
    with (out / "timings.csv").open() as f:
        walls = [float(r["wall_s"]) for r in csv.DictReader(f)]
    return sum(walls) / len(walls)


def _bare_physics(duration: float) -> tuple[float, float]:
    """Wall and CPU time of one balance-recovery run's bare physics (its torques replayed), s, best of 3."""
    import mujoco

    from crossdyn.experiments.biped.closed_loop import initial_state, simulate_scenario
    from crossdyn.experiments.biped.model import HIPS, biped_params
    from crossdyn.experiments.biped.scenarios import CONTROL_PERIOD, balance_scenario, controller_for, robot

    model, commands, biped = robot(), [], controller_for({})
    sc = balance_scenario(10.0, duration)

    def recording(t, est, ref):
        cmd = biped(t, est, ref)
        commands.append((cmd.wheels, cmd.hips))
        return cmd

    simulate_scenario(model, sc, recording)
    steps = int(round(CONTROL_PERIOD / model.opt.timestep))
    hip_act = [model.actuator(h).id for h in HIPS]
    wheel_act = [model.actuator(f"{s}_wheel").id for s in ("left", "right")]
    best = cpu = float("inf")
    for _ in range(3):
        data = mujoco.MjData(model)
        data.qpos[:] = initial_state(model, biped_params(model), sc)
        mujoco.mj_forward(model, data)
        wall, start = time.perf_counter(), time.process_time()
        for wheels, hips in commands:
            data.ctrl[wheel_act] = wheels
            data.ctrl[hip_act] = hips
            mujoco.mj_step(model, data, steps)
        cpu = min(cpu, time.process_time() - start)
        best = min(best, time.perf_counter() - wall)
    return best, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--duration", type=float, default=4.0, help="simulated time per run, s")
    args = parser.parse_args()
    from distributed import LocalCluster

    runs = args.samples + 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bare, bare_cpu = _bare_physics(args.duration)
        # best of two each: the first sweep in a process pays its warm-ups, and a shared machine's load drifts
        one_cpu, serial_cpu = (min(_cpu_sweep(tmp / f"cpu-{batch}-{i}", args, batch) for i in range(2))
                               for batch in (True, False))
        one = _timed_sweep(tmp / "one", args, workers=1)
        serial = _timed_sweep(tmp / "serial", args, workers=1, batch=False)
        two = _timed_sweep(tmp / "two", args, workers=2)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, protocol="tcp", host="127.0.0.1",
                          dashboard_address=None) as cluster:
            dask = _timed_sweep(tmp / "dask", args, scheduler=cluster.scheduler_address)
        same = len({(tmp / d / "samples.csv").read_bytes() for d in ("one", "serial", "two", "dask")}) == 1
        per_run = {d: _per_run(tmp / d) for d in ("one", "two", "dask")}
    print(f"{runs} balance-recovery runs of {args.duration:g} s (sweep seed 0); load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()) + f" on {os.cpu_count()} cores")
    print(f"  bare physics of one run {bare:5.2f} s; 1-worker sweep {one / runs:.2f} s per run = "
          f"{one / runs / bare:.2f}x the bare physics (bound <= 1.4x), one at a time {serial / runs:.2f} s = "
          f"{serial / runs / bare:.2f}x")
    print(f"  in CPU time: bare {bare_cpu:.2f} s, sweep {one_cpu / runs:.2f} s per run = "
          f"{one_cpu / runs / bare_cpu:.2f}x, one at a time {serial_cpu / runs:.2f} s = "
          f"{serial_cpu / runs / bare_cpu:.2f}x")
    print(f"  1 local worker        {one:7.1f} s  ({per_run['one']:.2f} s per run inside the worker)")
    print(f"  2 local workers       {two:7.1f} s  speed-up {one / two:.2f}x (aim >= 1.7x)"
          f"  ({per_run['two']:.2f} s per run)")
    print(f"  Dask, 2 workers       {dask:7.1f} s  overhead vs 2 local workers {dask / two:.2f}x (aim <= 1.2x)"
          f"  ({per_run['dask']:.2f} s per run)")
    print("  (a per-run time that grows with 2 workers is the 2 cores being shared, by each other or by "
          "other load, not engine overhead)")
    print(f"  samples.csv identical, batched or not, 1 or 2 workers or Dask: {same}")


if __name__ == "__main__":
    main()
