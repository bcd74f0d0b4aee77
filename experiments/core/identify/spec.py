"""What ``--fit`` may change: the grammar of its quantities, expanded against a model into ``mujoco.sysid`` parameters.

A quantity is named in the MJCF's own names; the name may be a glob
(``joint:*:damping``)::

    body:<name>:mass        kg (the body's rotational inertia scales with it, as a heavier
                            link of the same shape, unless its inertia is fitted too)
    body:<name>:com         m, the centre of mass in the body frame, 3 values; com[k] one of them
    body:<name>:inertia     kg m^2, the principal moments, 3 values; inertia[k] one of them
                            (a planar robot's links turn about one axis: inertia[2] alone)
    joint:<name>:damping | armature | frictionloss | stiffness
    actuator:<name>:gear    any sign, from 0 (a motor wired backwards, a gear the model lacks)
    actuator:<name>:bias    a constant force the actuator adds to its command (a torque offset),
                            in the actuator's force units, before its gear: MuJoCo's affine
                            bias (biasprm[0]), so identified.xml replays it without crossdyn
    delay                   s, how late every command reaches its motor
    sensor:<name>:bias      a constant offset added to the sensor's reading, its own units

Each quantity becomes a :class:`mujoco.sysid.Parameter` with a modifier that writes
it into an ``MjSpec``.  The body modifiers are crossdyn's own rather than
``mujoco.sysid.body_inertia_param``'s: that one compiles the whole spec again inside
every call to infer the inertial (two compiles per candidate model); here the
inertial is made explicit once, from the compiled model, and each call only writes
numbers.  ``delay`` and a sensor's ``bias`` are not model fields the rollouts can
carry (a delayed actuator's history cannot start from a log's state), so they have
no modifier: :mod:`.fit` applies them to the commands and the predicted readings.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from ..errors import CrossdynError
from ..limits import COMMAND_DELAY_MAX
from ..linearize import native_delay
from . import sysid

__all__ = ["SpecError", "Quantity", "parse_fit", "GRAMMAR", "ATTRIBUTES"]

GRAMMAR = ("body:<name>:mass|com|inertia|com[k]|inertia[k], joint:<name>:damping|armature|frictionloss|stiffness, "
           "actuator:<name>:gear|bias, delay, sensor:<name>:bias")
ATTRIBUTES = {"body": ("mass", "com", "inertia"), "joint": ("damping", "armature", "frictionloss", "stiffness"),
              "actuator": ("gear", "bias"), "sensor": ("bias",)}
_OBJ = {"body": mujoco.mjtObj.mjOBJ_BODY, "joint": mujoco.mjtObj.mjOBJ_JOINT,
        "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR, "sensor": mujoco.mjtObj.mjOBJ_SENSOR}


class SpecError(CrossdynError):
    """A ``--fit`` quantity that is malformed or names nothing in the model."""


@dataclass
class Quantity:
    """One fitted quantity.

    Attributes:
      spec: its name as ``--fit`` takes it, one element (``body:link2:mass``).
      kind: ``body``, ``joint``, ``actuator``, ``sensor`` or ``delay``.
      element: the element's name (empty for ``delay``).
      attr: ``mass``, ``damping``, ... (``delay`` for the delay).
      component: which component of a vector attribute alone (``com[0]``: 0), or None for all of it.
      nominal: the model's value, (size,).
      low, high: the optimizer's box, (size,).
      scale: a typical size of the quantity, (size,): the finite-difference step and the
        "the logs never move it" test are relative to it.
      unit: its unit, for the printout.
      parameter: the ``mujoco.sysid.Parameter`` (its modifier writes the value into a spec).
    """

    spec: str
    kind: str
    element: str
    attr: str
    nominal: np.ndarray
    low: np.ndarray
    high: np.ndarray
    scale: np.ndarray
    unit: str
    parameter: sysid.Parameter
    component: int | None = None

    @property
    def size(self) -> int:
        return int(self.nominal.size)


def _names(model: mujoco.MjModel, kind: str) -> list[str]:
    count = {"body": model.nbody, "joint": model.njnt, "actuator": model.nu, "sensor": model.nsensor}[kind]
    return [n for n in (mujoco.mj_id2name(model, _OBJ[kind], i) for i in range(count)) if n]


def _joint_unit(model: mujoco.MjModel, jid: int, attr: str) -> str:
    slide = model.jnt_type[jid] == mujoco.mjtJoint.mjJNT_SLIDE
    force, coord = ("N", "m") if slide else ("N m", "rad")
    return {"damping": f"{force} s/{coord}", "stiffness": f"{force}/{coord}", "frictionloss": force,
            "armature": "kg" if slide else "kg m^2"}[attr]


def _make(model: mujoco.MjModel, spec: mujoco.MjSpec, kind: str, name: str, attr: str,
          fitted: set[tuple[str, str, str]], component: int | None = None) -> Quantity:
    text = f"{kind}:{name}:{attr}" if kind != "delay" else "delay"
    if component is not None:
        text += f"[{component}]"
    modifier: Callable | None = None
    if kind == "body":
        body = model.body(name)
        mass0, inertia0 = float(body.mass[0]), np.array(body.inertia, float)
        # The inertial made explicit once, from the compiled model (inertiafromgeom or not).
        sbody = spec.body(name)
        sbody.explicitinertial = True
        sbody.mass, sbody.inertia = mass0, inertia0.copy()
        sbody.ipos, sbody.iquat = np.array(body.ipos, float), np.array(body.iquat, float)
        sbody.fullinertia = np.full(6, np.nan)
        scale_inertia = (kind, name, "inertia") not in fitted  # (any of its components fitted counts)
        if attr == "mass":
            nominal, unit = np.array([mass0]), "kg"
            low, high, scale = nominal * 0.1, nominal * 10.0, nominal.copy()

            def modifier(s, p, name=name, m0=mass0, i0=inertia0, scaled=scale_inertia):
                b = s.body(name)
                b.mass = float(p.value[0])
                if scaled:
                    b.inertia = i0 * (float(p.value[0]) / m0)
        elif attr == "com":
            nominal, unit = np.array(body.ipos, float), "m"
            size = max(float(np.linalg.norm(nominal)), 0.01)  # a body's own size, 1 cm at least
            low, high, scale = nominal - 10 * size, nominal + 10 * size, np.full(3, size)

            def modifier(s, p, name=name):
                s.body(name).ipos = np.array(p.value, float)
        else:
            nominal, unit = inertia0.copy(), "kg m^2"
            low, high, scale = nominal * 0.1, nominal * 10.0, np.maximum(nominal, 1e-12)

            def modifier(s, p, name=name):
                s.body(name).inertia = np.array(p.value, float)
    elif kind == "joint":
        jid = model.joint(name).id
        dof = model.jnt_dofadr[jid]
        value = {"damping": model.dof_damping[dof], "armature": model.dof_armature[dof],
                 "frictionloss": model.dof_frictionloss[dof], "stiffness": model.jnt_stiffness[jid]}[attr]
        nominal, unit = np.array([float(value)]), _joint_unit(model, jid, attr)
        # A typical size from the dof's own inertia when the model has none (M_ii = 1/invweight):
        # a 0.1 s damping time, a 10 rad/s^2 friction deceleration, a 10 rad/s natural frequency.
        inertia = 1.0 / max(float(model.dof_invweight0[dof]), 1e-12)
        typical = {"damping": 10 * inertia, "armature": inertia, "frictionloss": 10 * inertia,
                   "stiffness": 100 * inertia}[attr]
        scale = np.array([max(abs(nominal[0]), typical)])
        low, high = np.zeros(1), np.maximum(10 * nominal, 10 * scale)

        def modifier(s, p, name=name, attr=attr):
            joint = s.joint(name)
            if attr in ("damping", "stiffness"):
                values = np.array(getattr(joint, attr), float)
                values[0] = float(p.value[0])
                setattr(joint, attr, values)
            else:
                setattr(joint, attr, float(p.value[0]))
    elif kind == "actuator" and attr == "gear":
        g0 = float(model.actuator(name).gear[0])
        nominal, unit = np.array([g0]), ""
        scale = np.array([abs(g0) if g0 != 0 else 1.0])
        low, high = -10 * scale, 10 * scale  # any sign: a motor wired backwards is a gear of -1

        def modifier(s, p, name=name):
            gear = np.array(s.actuator(name).gear, float)
            gear[0] = float(p.value[0])
            s.actuator(name).gear = gear
    elif kind == "actuator":  # bias: MuJoCo's affine bias, biasprm[0]
        aid = model.actuator(name).id
        affine_types = (int(mujoco.mjtBias.mjBIAS_NONE), int(mujoco.mjtBias.mjBIAS_AFFINE))
        if int(model.actuator_dyntype[aid]) != int(mujoco.mjtDyn.mjDYN_NONE) or \
                int(model.actuator_gaintype[aid]) != int(mujoco.mjtGain.mjGAIN_FIXED) or \
                int(model.actuator_biastype[aid]) not in affine_types:
            raise SpecError(f"actuator:{name}:bias: actuator {name!r} is not affine (a motor, a position or velocity "
                            "servo, a general actuator without dynamics): it has no constant force to fit")
        affine = int(model.actuator_biastype[aid]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
        nominal = np.array([float(model.actuator_biasprm[aid, 0]) if affine else 0.0])
        on_joint = int(model.actuator_trntype[aid]) == int(mujoco.mjtTrn.mjTRN_JOINT)
        joint = int(model.actuator_trnid[aid, 0]) if on_joint else -1
        slide = joint >= 0 and int(model.jnt_type[joint]) == int(mujoco.mjtJoint.mjJNT_SLIDE)
        unit = "N" if slide else "N m" if joint >= 0 else "(actuator force)"
        # A typical size: the force that gives its dof 10 rad/s^2 (m/s^2), as for an unlimited motor's excitation.
        dof = model.jnt_dofadr[joint] if joint >= 0 else 0
        inertia = 1.0 / max(float(model.dof_invweight0[dof]), 1e-12)
        typical = 10.0 * inertia / max(abs(float(model.actuator_gear[aid, 0])), 1e-12)
        scale = np.array([max(abs(nominal[0]), typical)])
        low, high = nominal - 100 * scale, nominal + 100 * scale

        def modifier(s, p, name=name):
            actuator = s.actuator(name)
            if actuator.biastype == mujoco.mjtBias.mjBIAS_NONE:
                actuator.biastype = mujoco.mjtBias.mjBIAS_AFFINE
            prm = np.array(actuator.biasprm, float)
            prm[0] = float(p.value[0])
            actuator.biasprm = prm
    elif kind == "sensor":
        dim = int(model.sensor(name).dim[0])
        nominal, unit = np.zeros(dim), "(the sensor's units)"
        low, high, scale = np.full(dim, -1e3), np.full(dim, 1e3), np.ones(dim)
    else:  # delay
        nominal, unit = np.array([native_delay(model)]), "s"
        low, high, scale = np.zeros(1), np.array([COMMAND_DELAY_MAX]), np.array([0.01])  # 10 ms: a slow bus
    if component is not None:  # one component of a vector: the others stay as the spec has them
        if attr == "inertia":  # a moment alone stays within the others' sum and difference (A + B >= C)
            others = np.delete(nominal, component)
            low[component] = max(low[component], abs(others[0] - others[1]))
            high[component] = min(high[component], others.sum())
        nominal, low, high, scale = (np.array([a[component]]) for a in (nominal, low, high, scale))

        def modifier(s, p, name=name, attr=attr, k=component):
            b = s.body(name)
            values = np.array(b.ipos if attr == "com" else b.inertia, float)
            values[k] = float(p.value[0])
            if attr == "com":
                b.ipos = values
            else:
                b.inertia = values
    parameter = sysid.Parameter(text, nominal, low, high, modifier=modifier)
    return Quantity(text, kind, name, attr, nominal, low, high, scale, unit, parameter, component)


def parse_fit(specs: list[str], model: mujoco.MjModel, spec: mujoco.MjSpec, model_name: str) -> list[Quantity]:
    """Expand ``--fit`` quantities (globs allowed) into one :class:`Quantity` per model quantity, in order.

    Args:
      specs: the quantities as given.
      model: the compiled model (nominal values, names).
      spec: its ``MjSpec``; fitted bodies' inertials are made explicit in it.
      model_name: how messages name the model.

    Raises:
      SpecError: a quantity that is not of the grammar, or whose name matches nothing
        (with the closest name).
    """
    found: list[tuple[str, str, str, int | None]] = []
    for text in specs:
        text = text.strip()
        if text == "delay":
            if model.nu == 0:
                raise SpecError(f"--fit delay: {model_name} has no actuators, so no commands to delay")
            found.append(("delay", "", "delay", None))
            continue
        pieces = text.split(":")
        if len(pieces) != 3 or pieces[0] not in ATTRIBUTES or not pieces[1]:
            raise SpecError(f"--fit {text!r}: expected one of {GRAMMAR}")
        kind, pattern, attr = pieces
        component: int | None = None
        found_index = re.fullmatch(r"(com|inertia)\[(\d+)\]", attr) if kind == "body" else None
        if found_index:
            attr, component = found_index.group(1), int(found_index.group(2))
            if component > 2:
                raise SpecError(f"--fit {text!r}: a body's {attr} has components 0, 1 and 2")
        if attr not in ATTRIBUTES[kind]:
            raise SpecError(f"--fit {text!r}: a {kind} has {', '.join(ATTRIBUTES[kind])}, not {attr!r}")
        names = _names(model, kind)
        matched = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if kind == "body":
            matched = [n for n in matched if model.body(n).id != 0]  # the world has no mass to fit
        if not matched:
            close = difflib.get_close_matches(pattern, names, n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SpecError(f"--fit {text}: no {kind} {pattern!r} in {model_name}{hint}")
        for name in matched:
            jtype = int(model.jnt_type[model.joint(name).id]) if kind == "joint" else -1
            if jtype in (int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)):
                raise SpecError(f"--fit {text}: joint {name!r} is a free or ball joint; "
                                "crossdyn fits hinge and slide joints' damping, armature, friction and stiffness")
            found.append((kind, name, attr, component))
    unique = list(dict.fromkeys(found))
    wholes = {(k, n, a) for k, n, a, c in unique if c is None}
    unique = [u for u in unique if u[3] is None or u[:3] not in wholes]  # a whole vector covers its components
    fitted = {u[:3] for u in unique}
    return [_make(model, spec, kind, name, attr, fitted, component) for kind, name, attr, component in unique]
