"""Many closed loops of one model stepped in lockstep on MuJoCo's thread pool (``mujoco.batch``).

    traces = simulate_batch(model, [reg_a, reg_b, reg_c], 5.0, keyframe="upright",
                            imperfections=[[], [Delay(1)], [MassScale("pole", 1.2)]], seeds=[0, 1, 2])

Each simulation is :func:`~.simulate.simulate`'s loop with its own controller,
imperfections and seed, set up as ``simulate`` sets up a run (:mod:`.setup`), so its
:class:`~.trace.Trace` is the one ``simulate`` returns, bit for bit;
``mujoco.batch.Batch`` advances every simulation still running in one call,
whatever the thread count.  The controller is a
:class:`~crossdyn.experiments.core.regulator.Regulator` or one per simulation
(computed for all at once), one controller per simulation as ``simulate`` takes
it, or a function ``controller(t (n,), obs: Observation) -> (n, nu)`` over
the batch.  Model edits give a simulation its own model (``Batch.set_models``).
A simulation that diverges or stops leaves the batch; the others go on.
``Trace.warnings`` counts MuJoCo's warnings per simulation (a thread pool does
not attribute MuJoCo's text).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mujoco
import mujoco.batch
import numpy as np

from ..errors import ControllerError, ParameterError, StateError
from ..imperfections import Bound, Imperfection
from ..models import as_model
from ..regulator import Regulator, Switch
from . import setup
from .control_rate import control_period
from .kinds import CommandWriter, CompiledController, Starting
from .trace import Observation, Trace, applied, ctrl_clamp

__all__ = ["simulate_batch"]


class _SimData:
    """One simulation of the batch seen as an ``MjData``: each field its row of the batch's, bound on first use."""

    def __init__(self, batch: mujoco.batch.Batch, index: int):
        self._batch, self._index = batch, index

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        row = self._batch.bind(name)[self._index]
        if np.ndim(row) == 0:
            return row.item()
        self.__dict__[name] = row  # a view: stays live
        return row


def _per_sim(name: str, value, n: int, one: Callable[[Any], bool]) -> list:
    """``value`` for every simulation: one item repeated, or a sequence of ``n``."""
    if one(value):
        return [value] * n
    items = list(value)
    if len(items) != n:
        raise ParameterError(f"{name}: one for all simulations or {n} of them, got {len(items)}")
    return items


def _count(controller, imperfections, seeds, qpos, qvel, n: int | None) -> int:
    """The number of simulations: ``n``, or the length of whatever is given per simulation."""
    sizes = set()
    if isinstance(controller, Sequence):
        sizes.add(len(controller))
    if imperfections and all(isinstance(item, Sequence) and not isinstance(item, str) for item in imperfections):
        sizes.add(len(imperfections))
    if not isinstance(seeds, (int, np.integer)):
        sizes.add(len(seeds))
    for state in (qpos, qvel):
        if state is not None and np.ndim(state) == 2:
            sizes.add(len(state))
    if n is not None:
        sizes.add(int(n))
    if len(sizes) > 1:
        raise ParameterError(f"the per-simulation arguments disagree on the number of simulations: {sorted(sizes)}")
    if not sizes:
        raise ParameterError("give n, or something per simulation (controllers, imperfections, seeds, qpos)")
    count = sizes.pop()
    if count < 1:
        raise ParameterError(f"a batch needs at least one simulation, got {count}")
    return count


def simulate_batch(model: mujoco.MjModel | str | os.PathLike, controller, duration: float, *, n: int | None = None,
                   keyframe: str | int | None = None, qpos=None, qvel=None, control_dt: float | None = None,
                   imperfections: Sequence[Imperfection] | Sequence[Sequence[Imperfection]] = (),
                   seeds: int | Sequence[int] = 0, stop: Callable[[Observation], str | bool | None] | None = None,
                   record: Mapping[str, Callable[[mujoco.MjModel, Any], np.ndarray]] | None = None,
                   nthread: int = 0) -> list[Trace]:
    """Run ``n`` closed loops of ``model`` in lockstep; see the module docstring.

    Args:
      model: a compiled model, or a built-in name or MJCF/URDF path.
      controller: a ``Regulator``, one controller per simulation, or a function
        ``(t (n,), Observation) -> (n, nu)`` over the batch (the observation of every simulation at once).
      duration: simulated time, s.
      n: the number of simulations (default: the length of what is given per simulation).
      keyframe, control_dt, stop: as ``simulate`` takes them, for every simulation.
      qpos, qvel: ``(nq,)``/``(nv,)`` for all, or ``(n, nq)``/``(n, nv)`` one per simulation.
      imperfections: one list for every simulation, or a list per simulation.
      seeds: every simulation's seed, or one per simulation.
      record: as ``simulate`` takes it; ``view(model, data)`` sees that simulation's row.
      nthread: MuJoCo's threads (0: every CPU); the traces do not depend on it.

    Returns:
      One :class:`~.trace.Trace` per simulation.

    Raises:
      ControllerError: as ``simulate``'s, naming the simulation too.
      ParameterError: bad counts, duration, control period, keyframe or imperfections.
      StateError: a wrong-sized or non-finite initial state.
    """
    model = as_model(model)
    if not isinstance(nthread, (int, np.integer)) or isinstance(nthread, bool) or nthread < 0:
        raise ParameterError(f"nthread must be a whole number >= 0, got {nthread!r}")
    count = _count(controller, imperfections, seeds, qpos, qvel, n)
    distinct = {id(c): c for c in (controller if isinstance(controller, Sequence) else [controller])}
    clock = setup.timing(model, duration, control_dt, list(distinct.values()))
    lists = _per_sim("imperfections", imperfections, count,
                     lambda v: not v or not all(isinstance(i, Sequence) and not isinstance(i, str) for i in v))
    seed_list = _per_sim("seeds", seeds, count, lambda v: isinstance(v, (int, np.integer)))
    bounds = [setup.bind_run(model, items, clock, seed) for items, seed in zip(lists, seed_list, strict=True)]
    batch = mujoco.batch.Batch(model, count, int(nthread))
    if any(b.model is not model for b in bounds):
        batch.set_models([b.model for b in bounds])
    # _BatchRun binds the derived fields before the first call fills them.
    run = _BatchRun(batch, bounds, clock.steps, clock.per, record)
    _start(batch, bounds, keyframe, _rows("qpos", qpos, count), _rows("qvel", qvel, count))
    warnings: list[str] = []  # MuJoCo's text, unattributed across threads: the traces carry per-simulation counts
    with control_period(clock.dt), setup.quiet(warnings):
        run.go(_controls(controller, count, model, run), stop)
    return run.traces()


def _rows(name: str, value, n: int) -> list:
    if value is None or np.ndim(value) < 2:
        return [value] * n
    rows = np.asarray(value, dtype=float)
    if rows.shape[0] != n:
        raise StateError(f"{name} has {rows.shape[0]} rows for {n} simulations")
    return list(rows)


def _start(batch: mujoco.batch.Batch, bounds: list[Bound], keyframe, qpos: list, qvel: list) -> None:
    """Every simulation's initial state, as ``simulate`` sets it, then ``mj_forward`` in the batch."""
    spec, datas = mujoco.mjtState.mjSTATE_INTEGRATION, dict[int, mujoco.MjData]()
    for i, bound in enumerate(bounds):
        data = datas.get(id(bound.model))
        if data is None:  # one MjData per distinct model (allocating one costs more than resetting it)
            data = datas[id(bound.model)] = mujoco.MjData(bound.model)
        mujoco.mj_resetData(bound.model, data)  # as a new MjData is
        setup.initial_state(bound.model, data, keyframe, qpos[i], qvel[i], forward=False)
        mujoco.mj_getState(bound.model, data, batch.state[i], spec)
    batch.forward()


def _controls(controller, n: int, model: mujoco.MjModel, run: _BatchRun) -> Callable[[int], None]:
    """The per-step controller call: ``fill(i)`` writes every running simulation's command."""
    if _stackable(controller) or (isinstance(controller, Sequence) and controller
                                  and all(_stackable(c) for c in controller)):
        return _StackedRegulator(list(controller) if isinstance(controller, Sequence) else [controller] * n,
                                 run).fill
    if isinstance(controller, Sequence) and controller and all(
            isinstance(c, Switch) and _stackable(c.before) and _stackable(c.after) for c in controller):
        return _StackedSwitch(list(controller), run).fill
    if isinstance(controller, Sequence):
        return _PerSimulation(list(controller), run).fill
    return _Vectorized(controller, model, run).fill  # a function over the batch (setup.timing checked its kind)


def _stackable(controller) -> bool:
    """A regulator without a delay's memory: ``u = u_op - K x`` of the state alone, stacked across the batch."""
    return isinstance(controller, Regulator) and not controller.delay


class _BatchRun:
    """One batch's arrays, records and loop."""

    def __init__(self, batch: mujoco.batch.Batch, bounds: list[Bound], steps: int, per: int, record=None):
        self.batch, self.bounds, self.steps, self.per = batch, bounds, steps, per
        self.n, model = batch.nsim, batch.model
        self.qpos, self.qvel, self.ctrl = batch.bind("qpos"), batch.bind("qvel"), batch.bind("ctrl")
        self.raw, self.qacc, self.time = batch.bind("sensordata"), batch.bind("qacc"), batch.bind("time")
        self.xfrc = batch.bind("xfrc_applied")
        self.sensed = self.raw.copy()
        self.command = np.zeros((self.n, model.nu))
        self.datas = [_SimData(batch, i) for i in range(self.n)]
        self.running = np.ones(self.n, dtype=bool)
        self.rows = np.full(self.n, steps)
        self.stopped: list[str | None] = [None] * self.n
        self.record = {name: np.empty((steps, self.n, size)) for name, size in
                       (("qpos", model.nq), ("qvel", model.nv), ("sensordata", model.nsensordata),
                        ("command", model.nu), ("ctrl", model.nu))}
        self.times = np.empty((steps, self.n))
        # record=: per name, each simulation's view (flat) and the view's shape, and the table of all.
        self.extras: dict[str, tuple[list[np.ndarray], tuple]] = {}
        for name, view in (record or {}).items():
            views = [np.asarray(view(b.model, d)) for b, d in zip(bounds, self.datas, strict=True)]
            for array in views:
                if array.base is None or not np.shares_memory(array.reshape(-1), array):
                    raise ParameterError(f"record[{name!r}] must return a contiguous view of MuJoCo's data (bound "
                                         "once), not a copy")
            self.extras[name] = ([array.reshape(-1) for array in views], views[0].shape)
            self.record[f"extra:{name}"] = np.empty((steps, self.n, views[0].size))

    def end(self, sim: int, rows: int, why: str) -> None:
        self.running[sim], self.rows[sim], self.stopped[sim] = False, rows, why

    def go(self, fill: Callable[[int], None], stop) -> None:
        """The control steps (``simulate``'s order, every simulation at once)."""
        batch, bounds, record, per = self.batch, self.bounds, self.record, self.per
        running, datas = self.running, self.datas
        # Each simulation's per-step functions with the rows they edit, bound once.
        sensing = [(k, b.sense, self.sensed[k], datas[k]) for k, b in enumerate(bounds) if b.sense]
        acting = [(k, b.act, self.ctrl[k], datas[k]) for k, b in enumerate(bounds) if b.act]
        pushing = [(k, b.push, self.xfrc[k]) for k, b in enumerate(bounds) if b.push]
        observations = [Observation(b.model, d.qpos, d.qvel, self.sensed[k], d) for k, (b, d) in
                        enumerate(zip(bounds, self.datas, strict=True))] if stop is not None else []
        warning = batch.warning
        watched = sorted(int(w) for w in setup.WATCHED[:3])  # bad qpos, qvel, qacc: neighbours in mjtWarning
        assert watched == list(range(watched[0], watched[0] + 3))
        bad_ctrl = int(setup.WATCHED[3])
        # While every simulation runs (the common case) whole-array operations stand in for indexed ones.
        sensed, raw, command, ctrl, times = self.sensed, self.raw, self.command, self.ctrl, self.times
        qpos, qvel, qacc, clock = self.qpos, self.qvel, self.qacc, self.time
        extras = [(f"extra:{name}", item) for name, item in self.extras.items()]
        bad_ctrl_count, watched_counts = warning[:, bad_ctrl, 1], warning[:, watched[0]:watched[0] + 3, 1]  # views
        for i in range(self.steps):
            sensed[:] = raw
            for k, fns, row, data in sensing:
                if running[k]:
                    for fn in fns:
                        fn(row, data)
            fill(i)
            full = bool(running.all())  # a write_command may have ended its simulation
            if full:
                ctrl[:] = command
            else:
                ctrl[running] = command[running]
            for k, fns, row, data in acting:
                if running[k]:
                    for fn in fns:
                        fn(row, data)
            times[i] = clock
            record["qpos"][i], record["qvel"][i], record["sensordata"][i] = qpos, qvel, sensed
            record["command"][i], record["ctrl"][i] = command, ctrl
            for name, (views, _) in extras:
                rows = record[name][i]
                for k, view in enumerate(views):
                    rows[k] = view
            if stop is not None:
                for sim in np.flatnonzero(running):
                    reason = stop(observations[sim])
                    if reason:
                        self.end(int(sim), i + 1, reason if isinstance(reason, str) else "stopped")
                full = bool(running.all())
            if not running.any():
                break
            ids = None if full else np.flatnonzero(running)
            counted = bad_ctrl_count.copy()
            if any(running[k] for k, _, _ in pushing):
                for _ in range(per):
                    for k, fns, row in pushing:
                        if running[k]:
                            time = float(clock[k])
                            for fn in fns:
                                fn(row, time)
                    batch.step(ids)
            else:
                batch.step(ids, nstep=per)
            if (bad_ctrl_count != counted).any():
                k = int(np.flatnonzero(bad_ctrl_count != counted)[0])
                where = f"in simulation {k} {setup.at(i, float(times[i, k]))}"
                raise ControllerError(setup.refused_control(ctrl[k].tolist(), where))
            diverged = watched_counts.any(axis=1) | ~np.isfinite(qacc.sum(axis=1))
            diverged &= running
            for sim in np.flatnonzero(diverged):
                self.end(int(sim), i + 1, "diverged")

    def traces(self) -> list[Trace]:
        """One trace per simulation, as ``simulate`` returns it."""
        out = []
        names = [mujoco.mjtWarning(w).name for w in range(mujoco.mjtWarning.mjNWARNING)]
        for k, bound in enumerate(self.bounds):
            rows, rec = int(self.rows[k]), {name: np.ascontiguousarray(a[:, k]) for name, a in self.record.items()}
            counts = self.batch.warning[k, :, 1]
            warned = [f"MuJoCo warning {names[w]}: {int(counts[w])} time(s)" for w in np.flatnonzero(counts)]
            reached = rec["ctrl"] if bound.act else rec["command"]
            ctrl, saturated = applied(reached[:rows], ctrl_clamp(bound.model))
            extra = {name: rec[f"extra:{name}"][:rows].reshape((rows, *shape))
                     for name, (_, shape) in self.extras.items()}
            out.append(Trace(t=self.times[:rows, k].copy(), qpos=rec["qpos"][:rows], qvel=rec["qvel"][:rows],
                             sensordata=rec["sensordata"][:rows], command=rec["command"][:rows], ctrl=ctrl,
                             stopped=self.stopped[k], extra=extra, warnings=warned, model=bound.model,
                             saturated=saturated))
        return out


class _StackedRegulator:
    """Regulators, one per simulation, as one computation: ``u = u_op - K x`` with ``K (n, nu, 2 nv)``.

    A stacked ``matmul`` multiplies each row as the single one does, so the controls are ``simulate``'s.
    """

    def __init__(self, regulators: list[Regulator], run: _BatchRun):
        lins = [r.linearization for r in regulators]
        if len({(lin.nv, lin.nu) for lin in lins}) != 1 or lins[0].nu != run.command.shape[1]:
            raise ParameterError("the regulators are designed for models of other sizes than the batch's")
        self.run, self.nv = run, lins[0].nv
        self.K = np.stack([r.design.K for r in regulators])
        self.q0, self.v0 = np.stack([lin.qpos for lin in lins]), np.stack([lin.qvel for lin in lins])
        self.u0 = np.stack([lin.ctrl for lin in lins])
        targeted = [r.target is not None for r in regulators]
        self.target = np.stack([r.target if r.target is not None else lin.qpos
                                for r, lin in zip(regulators, lins, strict=True)]) if any(targeted) else None
        self.targeted = np.array(targeted)
        self.curved = [(k, lin.model) for k, lin in enumerate(lins) if not lin.plain]
        self.x = np.empty((run.n, 2 * self.nv, 1))
        self.y = np.empty((run.n, lins[0].nu, 1))

    def fill(self, i: int, out: np.ndarray | None = None) -> None:
        run, nv, x = self.run, self.nv, self.x
        qpos = run.qpos
        if self.target is not None:
            shifted = qpos - self.target + self.q0
            qpos = np.where(self.targeted[:, None], shifted, qpos)
        np.subtract(qpos, self.q0, out=x[:, :nv, 0])
        for k, lin_model in self.curved:
            dq = np.empty(nv)
            mujoco.mj_differentiatePos(lin_model, dq, 1.0, self.q0[k], qpos[k])
            x[k, :nv, 0] = dq
        np.subtract(run.qvel, self.v0, out=x[:, nv:, 0])
        np.matmul(self.K, x, out=self.y)
        np.subtract(self.u0, self.y[:, :, 0], out=run.command if out is None else out)


class _StackedSwitch:
    """Regulator switches (:class:`~crossdyn.experiments.core.regulator.Switch`), one per simulation, stacked."""

    def __init__(self, switches: list[Switch], run: _BatchRun):
        self.run = run
        self.before = _StackedRegulator([s.before for s in switches], run)
        self.after = _StackedRegulator([s.after for s in switches], run)
        self.at = np.array([s.at for s in switches])
        self.late = np.empty(run.command.shape)

    def fill(self, i: int) -> None:
        late = self.run.time >= self.at
        if late.all():
            self.after.fill(i)
            return
        self.before.fill(i)
        if late.any():
            self.after.fill(i, out=self.late)
            self.run.command[late] = self.late[late]


class _PerSimulation:
    """One controller per simulation, each called as ``simulate`` calls it, on its own simulation's view.

    A compiled controller (:class:`~.kinds.CompiledController`) given for several simulations runs in each on a
    copy of its own (its globals and statics apart), as each of several ``simulate`` runs loads a fresh copy of
    its library.
    """

    def __init__(self, controllers: list, run: _BatchRun):
        if len(controllers) != run.n:
            raise ParameterError(f"{len(controllers)} controllers for {run.n} simulations")
        self.run = run
        self.direct, self.calls, self.obs, self.commands = [], [], [], []
        seen: set[int] = set()
        for k, (controller, bound) in enumerate(zip(controllers, run.bounds, strict=True)):
            if isinstance(controller, CompiledController) and id(controller) in seen:
                controller = copy.copy(controller)
            seen.add(id(controller))
            if isinstance(controller, Starting):
                controller.start(bound.model, run.datas[k])
            self.direct.append(controller.write_command if isinstance(controller, CommandWriter) else None)
            self.calls.append(controller)
            data = run.datas[k]
            self.obs.append(Observation(bound.model, data.qpos, data.qvel, run.sensed[k], data))
            self.commands.append(setup.Commands(bound.model, run.command[k]))

    def fill(self, i: int) -> None:
        run = self.run
        for k in np.flatnonzero(run.running):
            t, command = float(run.time[k]), run.command[k]
            direct = self.direct[k]
            if direct is not None:
                if not direct(t, run.sensed[k], command):
                    run.end(int(k), i, "diverged")
                continue
            where = f"in simulation {k} {setup.at(i, t)}"
            try:
                value = self.calls[k](t, self.obs[k])
            except (Exception, SystemExit) as exc:
                raise setup.call_failed(exc, where) from None
            self.commands[k].write(value, where)
            if not np.isfinite(command).all():
                raise ControllerError(f"controller returned a non-finite control {where}: {command.tolist()}")


class _Vectorized:
    """A function over the whole batch: ``controller(t (n,), obs) -> (n, nu)``."""

    def __init__(self, controller: Callable, model: mujoco.MjModel, run: _BatchRun):
        self.controller, self.run = controller, run
        self.obs = Observation(model, run.qpos, run.qvel, run.sensed, run.batch)

    def fill(self, i: int) -> None:
        run = self.run
        t = run.time.copy()
        where = f"{setup.at(i, float(t[0]))} of the batch"
        try:
            value = np.asarray(self.controller(t, self.obs), dtype=float)
        except (Exception, SystemExit) as exc:
            raise setup.call_failed(exc, where) from None
        if value.shape != run.command.shape:
            raise ControllerError(f"controller returned shape {value.shape} {where}; expected {run.command.shape}: "
                                  "one row of controls per simulation")
        live = run.running
        if not np.isfinite(value[live]).all():
            k = int(np.flatnonzero(live & ~np.isfinite(value).all(axis=1))[0])
            raise ControllerError(f"controller returned a non-finite control for simulation {k} {where}: "
                                  f"{value[k].tolist()}")
        run.command[live] = value[live]
