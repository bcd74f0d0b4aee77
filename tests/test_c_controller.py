"""Users' C controllers in the closed loop (crossdyn.experiments.core.c_controller).

The C LQR is checked against the Python regulator it copies, on the cart-pole, in
double (round-off apart) and in float (float's rounding, bounded); a controller with
static state gives identical runs; a sign slip drops the pole; every fault (compile
error, no compiler, NaN, a nonzero return) is one crossdyn error naming where.
Compiled libraries go to a scratch cache (XDG_CACHE_HOME), never the user's.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from crossdyn import CController, CompileError, ControllerError, CrossdynError, simulate
from crossdyn.experiments.cart_pole import WEIGHTS, design
from crossdyn.experiments.core import c_controller
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.models import load_model
from support import assert_close

DURATION = 2.0  # s: 1000 steps of 2 ms, long enough for the pole to settle or fall
TILT = 0.2  # rad, the cart-pole experiment's initial tilt

LQR = """\
/* The cart-pole's LQR as firmware would carry it: u = u_op - K [q - q_op, qd]. */
{T} K[4] = {{0}};
{T} q_op[2] = {{0}};
{T} u_op = 0;

void step({T} t, const {T} *qpos, const {T} *qvel, {T} *ctrl)
{{
    (void)t;
    ctrl[0] = u_op - (K[0] * (qpos[0] - q_op[0]) + K[1] * (qpos[1] - q_op[1]) + K[2] * qvel[0] + K[3] * qvel[1]);
}}
"""

FLOAT_SIGNATURE = "void step(float t, const float *qpos, const float *qvel, float *ctrl);"


@pytest.fixture(autouse=True, scope="module")
def scratch_cache(tmp_path_factory):
    """Every library of this module compiled into one scratch cache (shared by the tests: each compiles once)."""
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("CROSSDYN_C_CACHE", raising=False)  # the suite's own scratch cache (conftest): XDG here
        patch.setenv("XDG_CACHE_HOME", str(folder))
        yield folder


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("c")
    (folder / "lqr.c").write_text(LQR.format(T="double"))
    (folder / "lqr_f.c").write_text(LQR.format(T="float"))
    return folder


@pytest.fixture(scope="module")
def regulator():
    return design(WEIGHTS)


def with_gains(controller: CController, reg) -> CController:
    lin = reg.linearization
    controller.params["K"] = reg.design.K.ravel()
    controller.params["q_op"] = lin.qpos
    controller.params["u_op"] = float(lin.ctrl[0])
    return controller


def balance(controller, duration: float = DURATION):
    return simulate(load_model("cart_pole"), controller, duration, keyframe="upright", qpos=[0.0, TILT])


def test_c_lqr_gives_the_python_regulators_trajectory(sources, regulator):
    c = with_gains(CController(sources / "lqr.c", "step", inputs=("qpos", "qvel")), regulator)
    ours, theirs = balance(c), balance(regulator)
    # Round-off: the same products summed in another order (NumPy's dot vs C), ~1e-16 per step, damped by the loop.
    assert_close(ours.qpos, theirs.qpos, atol=1e-9, what="qpos, C LQR vs Python regulator")
    assert_close(ours.command, theirs.command, atol=1e-9, what="force, N")
    assert abs(ours.qpos[-1, 1]) < 1e-2  # balanced: the comparison is of a working controller


def test_float_twin_differs_by_float_rounding_only(sources, regulator):
    c = with_gains(CController(sources / "lqr_f.c", "step", inputs=("qpos", "qvel"), signature=FLOAT_SIGNATURE),
                   regulator)
    ours, theirs = balance(c), balance(regulator)
    # It ran in float: every force it returned is a float32 number, and not all equal the double ones.
    assert np.array_equal(ours.command.astype(np.float32).astype(float), ours.command)
    force = np.abs(ours.command - theirs.command).max()
    difference = np.abs(ours.qpos - theirs.qpos).max()
    assert difference > 0
    # Float's relative rounding (6e-8) of terms of |K x| ~ 30 N at 0.2 rad: ~2e-6 N of force (1.6e-6 measured).
    assert force < 1e-5, force
    # That force error on the 1.1 kg cart for a 2 ms step moves the state by ~1e-11 per step; the stable loop
    # keeps the sum near 1e-8 (1.3e-8 measured); 1e-6 leaves a factor 100.
    assert difference < 1e-6, difference
    assert abs(ours.qpos[-1, 1]) < 1e-2


def test_a_sign_slip_in_the_gain_drops_the_pole(sources, regulator):
    c = with_gains(CController(sources / "lqr.c", "step"), regulator)
    gains = c.params["K"]
    gains[1] = -gains[1]  # the slip: theta's gain with the wrong sign
    c.params["K"] = gains
    trace = balance(c)
    assert trace.diverged or np.abs(trace.qpos[:, 1]).max() > 1.0  # fell: past 57 deg from upright


STATEFUL = """\
/* An integrator and a call counter in static storage, as firmware keeps them. */
static double integral;
static int calls;
double gain = 1.0;
double offset;

void reset(void) { integral = offset; }

void step(double t, const double *qpos, const double *qvel, double *ctrl)
{
    (void)t; (void)qvel;
    integral += qpos[1] * 0.002;
    calls++;
    ctrl[0] = gain * (integral + 1e-3 * calls);
}
"""


def test_static_state_never_leaks_between_runs(tmp_path):
    (tmp_path / "stateful.c").write_text(STATEFUL)
    c = CController(tmp_path / "stateful.c", "step")
    first, second = balance(c, 0.2), balance(c, 0.2)
    assert np.array_equal(first.command, second.command) and np.array_equal(first.qpos, second.qpos)
    assert first.command[0, 0] == pytest.approx(1e-3 + TILT * 0.002)  # the first step of each: calls == 1


def test_reset_runs_after_params_are_written(tmp_path):
    (tmp_path / "stateful.c").write_text(STATEFUL)
    c = CController(tmp_path / "stateful.c", "step", reset="reset")
    c.params["offset"] = 0.5
    trace = balance(c, 0.02)
    assert trace.command[0, 0] == pytest.approx(0.5 + TILT * 0.002 + 1e-3)


def test_params_by_name(sources, tmp_path):
    (tmp_path / "stateful.c").write_text(STATEFUL)
    c = CController(tmp_path / "stateful.c", "step")
    assert dict(c.params) == {"gain": 1.0, "offset": 0.0}  # initial values, read from the library
    c.params["gain"] = 2
    assert c.params["gain"] == 2.0
    del c.params["gain"]
    assert c.params["gain"] == 1.0
    with pytest.raises(KeyError, match="static"):
        c.params["integral"] = 1.0
    with pytest.raises(KeyError, match="'gian' is not a global"):
        c.params["gian"] = 1.0
    with pytest.raises(ParameterError, match="not finite"):
        c.params["gain"] = float("nan")
    lqr = CController(sources / "lqr.c", "step")
    with pytest.raises(ParameterError, match=r"shape \(4,\)"):
        lqr.params["K"] = [1.0, 2.0]
    assert set(lqr.as_params()) == {"u_op"}  # the scalars; arrays are set from Python only
    assert c.set_params({"gain": 3.0, "duration": 1.0}).params["gain"] == 3.0  # not its globals: skipped


def test_sensor_inputs_after_imperfections(tmp_path):
    from crossdyn import SensorNoise

    (tmp_path / "echo.c").write_text(textwrap.dedent("""\
        void step(double t, const double *angle, const double *all, double *ctrl)
        {
            (void)t;
            ctrl[0] = 100.0 * angle[0] + all[3];
        }
        """))
    c = CController(tmp_path / "echo.c", "step", inputs=("sensor:pole_angle", "sensordata"))
    trace = simulate("cart_pole", c, 0.02, keyframe="upright", qpos=[0.0, 0.01],
                     imperfections=[SensorNoise("pole_angle", std=1e-3)], seed=3)
    angle, rate = trace.sensor("pole_angle")[:, 0], trace.sensor("pole_rate")[:, 0]
    assert not np.array_equal(angle, trace.qpos[:, 1])  # the noisy reading, not the true angle
    assert_close(trace.command[:, 0], 100.0 * angle + rate, atol=1e-12, what="echoed sensors")  # round-off
    with pytest.raises(ParameterError, match="no sensor 'tip'"):
        simulate("cart_pole", CController(tmp_path / "echo.c", "step", inputs=("sensor:tip", "qpos")), 0.01)


def test_a_nan_command_is_a_controller_error_naming_the_time(tmp_path):
    (tmp_path / "nan.c").write_text("#include <math.h>\n"
                                    "void step(double t, const double *q, double *u) { u[0] = t > 0.01 ? NAN : 0; }\n")
    with pytest.raises(ControllerError, match=r"non-finite control at t = 0\.012 s"):
        simulate("cart_pole", CController(tmp_path / "nan.c", "step", inputs=("qpos",)), 0.1)


def test_a_nonzero_return_is_a_fault(tmp_path):
    (tmp_path / "fault.c").write_text("int step(float t, const float *q, float *u) { u[0] = 0; return t > 0.005; }\n")
    c = CController(tmp_path / "fault.c", "step", inputs=("qpos",),
                    signature="int step(float t, const float *q, float *u);")
    with pytest.raises(ControllerError, match=r"returned 1 \(a fault\) at t = 0\.006 s"):
        simulate("cart_pole", c, 0.1)


def test_a_compile_error_is_one_message_with_file_and_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("broken.c").write_text("double k = 1.0;\n\nvoid step(double t, const double *q, double *u)\n{\n"
                                "    u[0] = k * ;\n}\n")
    with pytest.raises(CompileError) as error:
        CController("broken.c", "step", inputs=("qpos",))
    message = str(error.value)
    assert message.startswith("broken.c:5: expected expression") and "\n" not in message, message
    assert isinstance(error.value, CrossdynError)
    Path("missing.c").write_text("void other(void) {}\n")
    with pytest.raises(CompileError, match="no function 'step' is defined"):
        CController("missing.c", "step")


def test_no_compiler_is_one_line_saying_what_to_install(sources, monkeypatch):
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(CompileError, match=r"no C compiler found \(looked for CC='no-such-cc'\): install one"):
        CController(sources / "lqr.c", "step")


def test_compiled_once_per_content(sources, tmp_path, monkeypatch, scratch_cache):
    runs = []
    real = subprocess.run

    def counting(command, *args, **kwargs):
        runs.append(command)
        return real(command, *args, **kwargs)

    source = tmp_path / "gain.c"
    source.write_text("double g = GAIN;\nvoid step(double t, const double *q, double *u) { u[0] = g * q[0]; }\n")
    monkeypatch.setattr(c_controller.subprocess, "run", counting)
    first = CController(source, "step", inputs=("qpos",), defines={"GAIN": 2})
    compiles = len(runs)
    assert compiles >= 1
    again = CController(source, "step", inputs=("qpos",), defines={"GAIN": 2})
    assert len(runs) == compiles and again.library == first.library  # from the cache
    other = CController(source, "step", inputs=("qpos",), defines={"GAIN": 3})  # another define: another build
    assert len(runs) > compiles and other.library != first.library and other.params["g"] == 3.0
    source.write_text(source.read_text() + "/* edited */\n")
    assert CController(source, "step", inputs=("qpos",), defines={"GAIN": 2}).library != first.library
    assert first.library.parent == c_controller.cache_dir() == scratch_cache / "crossdyn" / "c"  # XDG_CACHE_HOME
    monkeypatch.setenv("CROSSDYN_C_CACHE", str(tmp_path / "elsewhere"))
    assert CController(source, "step", inputs=("qpos",), defines={"GAIN": 2}).library.parent == tmp_path / "elsewhere"


def test_bad_arguments_are_parameter_errors(sources):
    with pytest.raises(ParameterError, match="no such file"):
        CController(sources / "nope.c", "step")
    with pytest.raises(ParameterError, match="input 'qacc'"):
        CController(sources / "lqr.c", "step", inputs=("qacc",))
    with pytest.raises(ParameterError, match="one pointer per input"):
        CController(sources / "lqr_f.c", "step", inputs=("qpos",), signature=FLOAT_SIGNATURE)


def _mapped_copies(folder: Path) -> set[str]:
    """The run copies of compiled controllers this process has mapped (their files are already removed)."""
    return {line.split()[-2] for line in Path("/proc/self/maps").read_text().splitlines()
            if f"{folder}/run-" in line}


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="reads Linux's /proc/self/maps")
def test_each_run_closes_the_last_runs_copy(tmp_path, scratch_cache):
    import gc

    gc.collect()  # the controllers of the tests before
    (tmp_path / "stateful.c").write_text(STATEFUL)
    c = CController(tmp_path / "stateful.c", "step")
    assert not _mapped_copies(c.library.parent)
    for _ in range(5):
        balance(c, 0.01)
    assert len(_mapped_copies(c.library.parent)) == 1  # the last run's; a sweep does not pile them up
    folder = c.library.parent
    del c  # no cycle holds it: closed at once
    assert not _mapped_copies(folder)


def test_a_signature_the_source_does_not_have_is_a_compile_error(sources):
    with pytest.raises(CompileError, match=r"lqr\.c: its definition does not match the declared 'void step\(float t"):
        CController(sources / "lqr.c", "step", signature=FLOAT_SIGNATURE)  # lqr.c's step is in double
    with pytest.raises(CompileError, match="conflicting types for 'step'"):
        CController(sources / "lqr_f.c", "step")  # the default signature is double


def test_several_sources_an_include_folder_and_a_header_edit(tmp_path):
    (tmp_path / "include").mkdir()
    header = tmp_path / "include" / "gains.h"
    header.write_text("extern double k_push;\n#define SCALE 2.0\n")
    (tmp_path / "gains.c").write_text('#include "gains.h"\ndouble k_push = 1.5;\n')
    (tmp_path / "step.c").write_text('#include "gains.h"\n'
                                     "void step(double t, const double *q, double *u) { u[0] = SCALE * k_push; }\n")
    sources, include = [tmp_path / "gains.c", tmp_path / "step.c"], [tmp_path / "include"]
    c = CController(sources, "step", inputs=("qpos",), include_dirs=include)
    assert dict(c.params) == {"k_push": 1.5}  # found in gains.c; step.c's extern is a declaration only
    c.params["k_push"] = 0.25
    assert simulate("cart_pole", c, 0.004).command[0, 0] == 0.5
    header.write_text("extern double k_push;\n#define SCALE 3.0\n")  # a header edit rebuilds
    again = CController(sources, "step", inputs=("qpos",), include_dirs=include)
    assert again.library != c.library and simulate("cart_pole", again, 0.004).command[0, 0] == 4.5


# -- the compiled loop: a C controller run as it is (no imperfections, stop, computed record or video)
# steps in C (crossdyn.experiments.core.loop.compiled); a stop that never fires keeps the Python loop, the reference.

def python_loop(obs) -> None:
    return None


def test_the_compiled_loop_gives_the_python_loops_trace_bit_for_bit(sources, regulator):
    c = with_gains(CController(sources / "lqr.c", "step", inputs=("qpos", "qvel")), regulator)
    model = load_model("cart_pole")
    runs = [simulate(model, c, DURATION, keyframe="upright", qpos=[0.0, TILT], stop=stop,
                     record={"xpos": lambda m, d: d.xpos}) for stop in (None, python_loop)]
    for field in ("t", "qpos", "qvel", "sensordata", "command", "ctrl"):
        assert np.array_equal(getattr(runs[0], field), getattr(runs[1], field)), field
    assert np.array_equal(runs[0].extra["xpos"], runs[1].extra["xpos"])
    assert runs[0].stopped is None and runs[1].stopped is None


SLIDE = """<mujoco><worldbody><body><joint name="s" type="slide"/><geom size=".1" mass="0.001"/></body></worldbody>
<actuator><motor joint="s"/></actuator></mujoco>"""  # no ctrlrange: MuJoCo itself refuses a control past 1e10


@pytest.mark.parametrize("stop", [None, python_loop], ids=["compiled loop", "python loop"])
@pytest.mark.parametrize("body, outcome", [
    ("u[0] = t > 0.01 ? NAN : 0;", r"non-finite control at t = 0\.012 s"),
    ("u[0] = t > 0.01 ? 1e11 : 0;", r"beyond MuJoCo's limit .* at control step 6 \(t = 0\.012 s\)"),
    ("u[0] = t > 0.02 ? 9e9 : 0;", "diverged"),  # 9e12 m/s^2 on a gram: MuJoCo's bad-acceleration warning
], ids=["nan", "refused", "diverged"])
def test_both_loops_end_a_bad_run_alike(tmp_path, stop, body, outcome):
    import mujoco

    (tmp_path / "bad.c").write_text("#include <math.h>\nvoid step(double t, const double *q, double *u) { "
                                    f"{body} }}\n")
    model = mujoco.MjModel.from_xml_string(SLIDE)
    c = CController(tmp_path / "bad.c", "step", inputs=("qpos",))
    if outcome == "diverged":
        trace = simulate(model, c, 0.5, stop=stop)
        assert trace.stopped == "diverged" and trace.t.size == 11  # the row of the step that diverged is kept
        assert any("QACC" in w for w in trace.warnings), trace.warnings  # MuJoCo's warning collected, not printed
    else:
        with pytest.raises(ControllerError, match=outcome):
            simulate(model, c, 0.5, stop=stop)


def test_where_the_compiled_loop_cannot_be_built_the_python_loop_runs_the_same(sources, regulator, monkeypatch):
    from crossdyn.experiments.core.loop import compiled as c_loop

    c = with_gains(CController(sources / "lqr.c", "step", inputs=("qpos", "qvel")), regulator)
    compiled = balance(c, 0.2)

    def no_headers():
        raise CompileError("crossdyn_loop.c:3: mujoco/mujoco.h: No such file or directory")

    monkeypatch.setattr(c_loop, "_library", no_headers)
    c_loop.available.cache_clear()
    try:
        assert not c_loop.available()
        fallback = balance(c, 0.2)
    finally:
        c_loop.available.cache_clear()
    assert np.array_equal(compiled.qpos, fallback.qpos) and np.array_equal(compiled.ctrl, fallback.ctrl)


COUNTER = """\
/* A call counter in static storage: each run's commands are 1, 2, 3 ... */
static int calls;

void step(double t, const double *qpos, const double *qvel, double *ctrl)
{
    (void)t; (void)qpos; (void)qvel;
    ctrl[0] = 1e-3 * ++calls;
}
"""


def test_one_c_controller_for_several_runs_of_a_batch_gives_each_its_own_copy(tmp_path):
    from crossdyn import simulate_batch

    (tmp_path / "counter.c").write_text(COUNTER)
    c = CController(tmp_path / "counter.c", "step")
    traces = simulate_batch(load_model("cart_pole"), [c, c, c], 0.006, keyframe="upright")
    expected = 1e-3 * np.arange(1, traces[0].command.shape[0] + 1)
    for trace in traces:  # each run counts 1, 2, 3 (they once shared one copy: 1, 4, 7 in the first)
        assert np.array_equal(trace.command[:, 0], expected), trace.command[:, 0]
    assert np.array_equal(simulate(load_model("cart_pole"), c, 0.006, keyframe="upright").command[:, 0], expected)


TYPES = """\
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#define NJ 3

char c = 7; signed char sc = -7; unsigned char uc = 250;
short s = -300; unsigned short us = 60000; short int si = 1; unsigned short int usi = 2;
int i = -70000; unsigned u = 4000000000u; signed sg = -3;
long l = -5; unsigned long ul = 5; long long ll = -6; unsigned long long ull = 18446744073709551615ull;
bool b = true; float f = 0.1f; double d = 0.1; long double ld = 0.25L;
size_t n = 4; ptrdiff_t pd = -4; intmax_t im = -8; uintptr_t up = 8;
int8_t i8 = -100; uint8_t u8 = 200; int16_t i16 = -1; uint16_t u16 = 1; int32_t i32 = -1; uint32_t u32 = 1;
int64_t i64 = -1; uint64_t u64 = 1; int_least8_t il8 = 1; uint_fast16_t uf16 = 1;
float K[NJ][2 * NJ] = {{1, 2, 3, 4, 5, 6}};
double w[sizeof(int) * 2];
int z[] = {1, 2, 3};
#if 0
double not_compiled = 1.0;
#endif

void step(double t, const double *qpos, const double *qvel, double *ctrl)
{
    (void)t; (void)qpos; (void)qvel;
    ctrl[0] = (double)us + (double)i8 + (double)K[2][5] + (double)ld;
}
"""


def test_every_c_type_is_a_parameter_held_as_the_chip_holds_it(tmp_path):
    """Every integer and floating type of C and <stdint.h>, arrays sized by any constant expression, their
    ranges enforced with one line naming the global, its type and its range."""
    source = tmp_path / "types.c"
    source.write_text(TYPES)
    c = CController(source, "step")
    names = {"c", "sc", "uc", "s", "us", "si", "usi", "i", "u", "sg", "l", "ul", "ll", "ull", "b", "f", "d", "ld",
             "n", "pd", "im", "up", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "il8", "uf16", "K", "w",
             "z"}
    assert set(c.params) == names  # what the compiler compiles: not the global under #if 0
    assert (c.params["uc"], c.params["us"], c.params["u"], c.params["ull"]) == (250, 60000, 4000000000, 2**64 - 1)
    assert (c.params["c"], c.params["b"], c.params["ld"], c.params["n"], c.params["i8"]) == (7, True, 0.25, 4, -100)
    assert c.params["f"] == float(np.float32(0.1)) and c.params["d"] == 0.1  # each as its type holds 0.1
    assert (c.params["K"].shape, c.params["w"].shape, c.params["z"].tolist()) == ((3, 6), (2 * 4, ), [1, 2, 3])
    for name, value, words in (("us", 70000, "an unsigned short, 0 to 65,535; got 70,000, outside its range"),
                               ("i8", 200, "an int8_t, -128 to 127; got 200"),
                               ("u8", -1, "a uint8_t, 0 to 255; got -1"),
                               ("sc", 128, "a signed char, -128 to 127; got 128"), ("b", 2, "a _Bool, 0 to 1; got 2"),
                               ("f", 1e39, "a float, finite, within +-3.40282e+38; got 1e+39"),
                               ("K", np.full((3, 6), 1e39), "a float, finite, within +-3.40282e+38; got 1e+39")):
        with pytest.raises(ParameterError, match=re.escape(f"global {name} of {source} is {words}")):
            c.params[name] = value
    c.params["us"], c.params["i8"], c.params["ld"] = 65535, -128, 0.5  # the ends of their ranges reach the chip
    K = c.params["K"]
    K[2, 5] = 0.25
    c.params["K"] = K
    trace = simulate(load_model("cart_pole"), c, 0.004)
    assert trace.command[0, 0] == 65535 - 128 + 0.25 + 0.5


def test_a_source_path_may_hold_any_character(tmp_path):
    """A quote, a backslash, a dollar sign or a space in a folder's name is the user's business: it compiles."""
    folder = tmp_path / 'a "quoted" \\ $HOME folder'
    folder.mkdir()
    (folder / "counter.c").write_text(COUNTER)
    c = CController(folder / "counter.c", "step")
    assert simulate(load_model("cart_pole"), c, 0.004).command[0, 0] == 1e-3
