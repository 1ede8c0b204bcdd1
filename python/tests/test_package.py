"""The CPU suite: import, loading, load options, every error kind, streams and the no-GPU errors.
Runs without a GPU (CI); the tests that assert a no-GPU error skip on a GPU machine, and the
other way round."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import torchtrt_executorch as tet
from conftest import GPU_REASON, HAVE_GPU

no_gpu_only = pytest.mark.skipif(HAVE_GPU, reason="asserts the errors of a machine without a GPU; this one has one")


def xy(rows=8, cols=64):
    rng = np.random.default_rng(0)
    return rng.standard_normal((rows, cols), dtype=np.float32), rng.standard_normal((rows, cols), dtype=np.float32)


# ---- import and registration -------------------------------------------------------------------

def test_import_registers_the_backend():
    assert tet.backend_registered() is True


def test_import_needs_no_torch():
    code = "import sys, torchtrt_executorch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


def test_backend_library_is_the_packages_and_links_executorch():
    so = tet._C.__file__
    maps = open("/proc/self/maps").read()
    backends = {line.split()[-1] for line in maps.splitlines() if "libtorchtrt_executorch_backend" in line}
    assert len(backends) == 1, backends
    runtimes = {line.split()[-1] for line in maps.splitlines() if line.endswith("/libexecutorch.so")}
    assert len(runtimes) == 1, runtimes  # one ExecuTorch runtime, one backend registry
    assert so


def test_executorch_runtime_is_the_installed_packages():
    """With an executorch package installed, the libexecutorch.so in the process is its lib/'s (the
    backend's RUNPATH), the one executorch.runtime's _C links: one backend registry."""
    import importlib.util
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("no executorch package installed: the runtime comes from the build's prefix")
    pkg_lib = os.path.realpath(os.path.join(list(spec.submodule_search_locations)[0], "lib"))
    maps = open("/proc/self/maps").read().splitlines()
    runtimes = {os.path.realpath(line.split()[-1]) for line in maps if line.endswith("/libexecutorch.so")}
    assert runtimes == {os.path.join(pkg_lib, "libexecutorch.so")}


# ---- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(tet.ERROR_CLASSES))
def test_every_error_kind_is_its_own_class(code):
    cls = tet.ERROR_CLASSES[code]
    with pytest.raises(cls) as info:
        tet._C._raise_for_test(code, f"a {code} message from C++")
    assert isinstance(info.value, tet.Error)
    assert info.value.code == code
    assert info.value.message == f"a {code} message from C++"
    assert str(info.value) == f"a {code} message from C++"


def test_a_message_that_is_not_utf8_still_raises_its_error():
    # A message C++ holds that is not UTF-8 (a name quoted unescaped somewhere) raises its own error,
    # the bytes shown as \xNN, not a UnicodeDecodeError in its place.
    with pytest.raises(tet.InvalidProgramError) as info:
        tet._C._raise_for_test("InvalidProgram", b"method 'forw\xacrd' \xe4\xb8\xad")
    assert info.value.message == "method 'forw\\xacrd' \u4e2d", info.value.message


def test_error_kinds_cover_the_cpp_error_codes():
    cpp = [c for c in tet._C._error_code_names() if c != "Ok"]
    assert sorted(cpp) == sorted(tet.ERROR_CLASSES)


def test_builtin_bases():
    assert issubclass(tet.InvalidArgumentError, ValueError)
    assert issubclass(tet.NotFoundError, LookupError)
    assert issubclass(tet.MemoryAllocationError, MemoryError)


# ---- loading -----------------------------------------------------------------------------------

def test_cpu_program_runs(programs):
    p = tet.load(programs / "cpu_add.pte")
    assert p.method_names == ["forward"]
    spec = p.forward.inputs
    assert [s.dtype for s in spec] == ["float32", "float32"] and spec[0].shape == (8, 64) and spec[0].planned
    x, y = xy()
    (out,) = p.forward(x, y)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (8, 64)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    # The output is a copy: the next call does not change it.
    (out2,) = p.run("forward", y, y)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    np.testing.assert_allclose(out2, 2 * y, rtol=1e-6)


def test_smaller_dynamic_shape(programs):
    p = tet.load(programs / "cpu_add.pte")
    x, y = xy(4, 64)
    (out,) = p.forward(x, y)
    assert out.shape == (4, 64)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_missing_file(tmp_path):
    with pytest.raises(tet.NotFoundError, match="cannot open program"):
        tet.load(tmp_path / "none.pte")


def test_not_a_program(tmp_path):
    f = tmp_path / "garbage.pte"
    f.write_bytes(b"this is not a flatbuffer" * 10)
    with pytest.raises(tet.Error) as info:
        tet.load(f)
    assert info.value.code in ("InvalidProgram", "InvalidArgument", "NotSupported")
    assert "loading program" in str(info.value)


def test_damaged_programs_are_refused_without_a_crash(programs, tmp_path):
    # The flatbuffer is verified before anything of it is read (ExecuTorch's default verification
    # checks the header only; about one load in four of these damages crashed the process with it).
    # In a process of its own, so that a crash is reported as one.
    code = """
import random, sys, torchtrt_executorch as t
original = open(sys.argv[1], "rb").read()
rng = random.Random(54)
refused = loaded = 0
for k in range(40):
    damaged = bytearray(original)
    for _ in range(4):
        damaged[8 + rng.randrange(min(len(damaged), 4096) - 8)] = rng.randrange(256)
    path = sys.argv[2] + f"/damaged_{k}.pte"
    open(path, "wb").write(damaged)
    try:
        t.load(path)
        loaded += 1
    except t.Error as e:
        assert str(e), k
        refused += 1
print("refused", refused, "loaded", loaded)
"""
    r = subprocess.run([sys.executable, "-c", code, str(programs / "cpu_add.pte"), str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}: stdout={r.stdout!r} stderr={r.stderr[-2000:]!r}"
    refused = int(r.stdout.split()[1])
    assert refused >= 20, r.stdout


# A program's flatbuffer, read by hand to plant one flaw (the tests below): the little-endian words,
# where field `field` of the table at `table` is in its vtable, and where an offset field points.
def _u32(b, at):
    return int.from_bytes(b[at:at + 4], "little")


def _field_slot(b, table, field):
    vtable = table - int.from_bytes(b[table:table + 4], "little", signed=True)
    return vtable + 4 + 2 * field


def _target(b, table, field):
    slot = _field_slot(b, table, field)
    o = int.from_bytes(b[slot:slot + 2], "little")
    return table + o + _u32(b, table + o)


def _element(b, vector, i):  # element i of a vector of tables
    slot = vector + 4 + 4 * i
    return slot + _u32(b, slot)


def _first_plan(b):  # execution_plan[0] (the program's field 1)
    return _element(b, _target(b, _u32(b, 0), 1), 0)


def _load_in_own_process(path):
    """tet.load(path) in a process of its own (a crash is reported as one): its stdout, "loaded" or the
    error's class and message."""
    code = ("import sys, torchtrt_executorch as t\n"
            "try:\n    t.load(sys.argv[1]); print('loaded')\nexcept t.Error as e:\n    print(type(e).__name__, e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    return r.stdout


def test_an_input_of_a_type_executorch_does_not_know_is_refused(programs, tmp_path):
    # ExecuTorch's verifier lets an unknown scalar type through on a dynamic tensor, and MethodMeta
    # aborts on one; the package loads the method first, whose tensor parser refuses it. cpu_add's
    # input 0 (a dynamic tensor) given the type -37, in a process of its own.
    b = bytearray((programs / "cpu_add.pte").read_bytes())
    plan = _first_plan(b)
    inputs = _target(b, plan, 3)
    tensor = _target(b, _element(b, _target(b, plan, 2), _u32(b, inputs + 4)), 1)  # values[inputs[0]].val
    type_slot = _field_slot(b, tensor, 0)
    at = int.from_bytes(b[type_slot:type_slot + 2], "little")
    assert at != 0 and b[tensor + at] == 6  # Float
    b[tensor + at] = (-37) & 0xFF
    bad = tmp_path / "bad_type.pte"
    bad.write_bytes(bytes(b))
    out = _load_in_own_process(bad)
    assert out.startswith("InvalidProgramError loading method 'forward'"), out


def test_a_delegate_without_its_compile_specs_is_refused_not_crashed_on(programs, tmp_path):
    # ExecuTorch 1.5.1 reads a delegate's compile specs without checking that the program has them;
    # the package walks the program's flatbuffer first (Note [a delegate's fields]). elementwise's
    # delegate 0 with its compile_specs field left out, in a process of its own.
    b = bytearray((programs / "elementwise.pte").read_bytes())
    delegate = _element(b, _target(b, _first_plan(b), 7), 0)
    slot = _field_slot(b, delegate, 2)
    b[slot:slot + 2] = b"\0\0"  # the field absent, as a writer that left it out makes it
    bad = tmp_path / "no_specs.pte"
    bad.write_bytes(bytes(b))
    out = _load_in_own_process(bad)
    assert out.startswith("InvalidProgramError"), out
    assert "delegate 0 of method 'forward' lacks its compile specs" in out, out


def test_a_method_name_that_is_not_utf8_is_refused_naming_it(programs, tmp_path):
    # A name Python cannot hold (str is Unicode) is refused at the load, quoted with the byte escaped,
    # rather than failing in the conversion to str (UnicodeDecodeError). cpu_add's method name
    # "forward" made "forw\xacrd", in a process of its own.
    b = bytearray((programs / "cpu_add.pte").read_bytes())
    name = _target(b, _first_plan(b), 0)
    assert bytes(b[name + 4:name + 11]) == b"forward"
    b[name + 8] = 0xAC
    bad = tmp_path / "not_utf8_name.pte"
    bad.write_bytes(bytes(b))
    out = _load_in_own_process(bad)
    assert out.startswith("InvalidProgramError"), out
    assert "method name 'forw\\xacrd' is not valid UTF-8" in out, out


def test_malformed_blob_is_an_invalid_program(programs):
    with pytest.raises(tet.InvalidProgramError, match="TensorRTBackend init: InvalidProgram: blob"):
        tet.load(programs / "malformed_blob.pte")


def test_delegated_program_without_an_engine_factory(programs):
    # In a process of its own, where no test engines are installed: this build has no TensorRT
    # adapter, so init refuses with the project's message.
    code = ("import sys, torchtrt_executorch as t\n"
            "try:\n    t.load(sys.argv[1])\nexcept t.NotSupportedError as e:\n    print('NotSupportedError:', e)\n")
    env = {k: v for k, v in os.environ.items() if k != "TRTET_TEST_ENGINES_AUTOINSTALL"}
    r = subprocess.run([sys.executable, "-c", code, str(programs / "elementwise.pte")], capture_output=True, text=True,
                       env=env, timeout=120)
    if "TensorRT adapter" not in r.stdout and "engine factory" not in r.stdout:
        pytest.fail(f"expected NotSupportedError; got stdout={r.stdout!r} stderr={r.stderr[-2000:]!r}")
    assert r.stdout.startswith("NotSupportedError: loading method 'forward'")
    assert "TensorRTBackend init: NotSupported: no engine factory is installed" in r.stdout


def test_lazy_method_loading(programs):
    p = tet.load(programs / "cpu_add.pte", load_methods=False)
    x, y = xy()
    np.testing.assert_allclose(p.forward(x, y)[0], x + y, rtol=1e-6)


def test_no_such_method(programs):
    p = tet.load(programs / "cpu_add.pte")
    with pytest.raises(AttributeError):
        p.backward
    with pytest.raises(tet.NotFoundError, match="no method 'backward'"):
        p.method("backward")


def test_close_then_call(programs):
    p = tet.load(programs / "cpu_add.pte")
    x, y = xy()
    p.forward(x, y)
    p.close()
    assert p.closed
    with pytest.raises(tet.InvalidStateError, match="was closed"):
        p.forward(x, y)
    p.close()  # twice is fine
    with tet.load(programs / "cpu_add.pte") as q:
        np.testing.assert_allclose(q.forward(x, y)[0], x + y, rtol=1e-6)
    assert q.closed


# ---- load options ------------------------------------------------------------------------------

def test_unknown_option(programs):
    with pytest.raises(tet.InvalidArgumentError, match="unknown load option 'use_cuda_graph'"):
        tet.load(programs / "cpu_add.pte", use_cuda_graph=True)


@pytest.mark.parametrize("key,value", [("use_cuda_graphs", "yes"), ("cuda_graph_cache_size", 1.5),
                                       ("tensorrt_runtime", 3), ("staging_budget_mb", True),
                                       ("allow_engine_host_code", "1")])
def test_option_of_the_wrong_type(programs, key, value):
    with pytest.raises(tet.InvalidArgumentError, match=f"load option {key}"):
        tet.load(programs / "cpu_add.pte", **{key: value})


def test_option_value_too_long(programs):
    with pytest.raises(tet.InvalidArgumentError, match="at most 255"):
        tet.load(programs / "cpu_add.pte", tensorrt_runtime="x" * 300)


def test_int_option_beyond_int32(programs):
    with pytest.raises(tet.InvalidArgumentError, match="string of digits"):
        tet.load(programs / "cpu_add.pte", weight_streaming_budget=1 << 40)


def test_every_option_is_accepted_by_a_cpu_program(programs):
    p = tet.load(programs / "cpu_add.pte", tensorrt_runtime="lean", use_cuda_graphs=True, cuda_graph_cache_size=4,
                 staging_budget_mb="16", max_program_staging_budget_mb=64, weight_streaming_budget=1 << 20,
                 allow_engine_host_code=False, max_blob_metadata_bytes=4096)
    x, y = xy()
    np.testing.assert_allclose(p.forward(x, y)[0], x + y, rtol=1e-6)


def test_malformed_option_reaches_the_backend(programs, plugin):
    # The backend checks the values at init: a negative budget is its InvalidArgument, named.
    with pytest.raises(tet.InvalidArgumentError, match="weight_streaming_budget"):
        tet.load(programs / "fake.pte", weight_streaming_budget=-5)


# ---- bad inputs: a clear error, and the next good call works -------------------------------------

def bad_inputs():
    x, y = xy()
    return {
        "count": ((x,), "takes 2 inputs; 1 were given"),
        "dtype": ((x.astype(np.float64), y), "float64 where the method takes float32"),
        "rank": ((x.reshape(8, 64, 1), y), "has 3 dimensions"),
        "non-contiguous": ((np.ascontiguousarray(x.T).T[:, :], y), None),
        "strided": ((np.ones((8, 128), np.float32)[:, ::2], y), "not C-contiguous"),
        "too large": ((np.ones((16, 64), np.float32), y), r"shape \[16, 64\] is beyond the method's bound \[8, 64\] "
                                                          r"\(dimension 0: 16 > 8; 1024 elements where the bound holds 512\)"),
        "not an array": (("x", y), "is not an array"),
        "int dtype": ((x.astype(np.int32), y), "int32 where the method takes float32"),
    }


@pytest.mark.parametrize("case", sorted(bad_inputs()))
def test_bad_input_then_a_good_call(programs, case):
    args, pattern = bad_inputs()[case]
    p = tet.load(programs / "cpu_add.pte")
    x, y = xy()
    if case == "non-contiguous":
        a = np.asfortranarray(x)
        if a.flags.c_contiguous:  # a Fortran copy of a matrix is not C-contiguous
            pytest.skip("numpy made it contiguous")
        args, pattern = (a, y), "not C-contiguous"
    with pytest.raises(tet.InvalidArgumentError, match=pattern):
        p.forward(*args)
    np.testing.assert_allclose(p.forward(x, y)[0], x + y, rtol=1e-6)


def test_outputs_the_program_plans_are_refused(programs):
    p = tet.load(programs / "cpu_add.pte")
    x, y = xy()
    with pytest.raises(tet.InvalidArgumentError, match="planned by the program: pass None"):
        p.forward(x, y, outputs=[np.empty_like(x)])
    with pytest.raises(tet.InvalidArgumentError, match="has 1 outputs; 2 were given"):
        p.forward(x, y, outputs=[None, None])
    (out,) = p.forward(x, y, outputs=[None])
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_no_leak_on_rejected_calls(programs):
    p = tet.load(programs / "cpu_add.pte")
    x, y = xy()
    bad = x.astype(np.float64)
    import sys as _sys
    before = _sys.getrefcount(bad)
    for _ in range(100):
        with pytest.raises(tet.InvalidArgumentError):
            p.forward(bad, y)
    gc.collect()
    assert _sys.getrefcount(bad) == before


def test_inputs_stay_referenced_only_until_the_next_call(programs):
    import weakref
    p = tet.load(programs / "cpu_add.pte")
    x, y = xy()

    class A(np.ndarray):
        pass

    a = x.view(A)
    ref = weakref.ref(a)
    p.forward(a, y)
    del a
    gc.collect()
    assert ref() is not None  # held by the program until its next call
    p.forward(x, y)
    gc.collect()
    assert ref() is None


# ---- streams -----------------------------------------------------------------------------------

class ProtocolStream:
    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


class CupyLike:
    def __init__(self, ptr):
        self.ptr = ptr


def test_stream_selects_nests_and_restores():
    assert tet.current_stream() is None
    with tet.stream(0x1000) as s:
        assert s == 0x1000 and tet.current_stream() == 0x1000
        with tet.stream(ProtocolStream(0x2000)):
            assert tet.current_stream() == 0x2000
            with tet.stream(CupyLike(0x3000)):
                assert tet.current_stream() == 0x3000
            assert tet.current_stream() == 0x2000
        assert tet.current_stream() == 0x1000
    assert tet.current_stream() is None


def test_stream_zero_is_a_selection():
    with tet.stream(0):
        assert tet.current_stream() == 0
    assert tet.current_stream() is None


def test_stream_is_per_thread():
    seen = {}

    def other():
        seen["other"] = tet.current_stream()
        with tet.stream(0x5000):
            seen["inside"] = tet.current_stream()

    with tet.stream(0x4000):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert tet.current_stream() == 0x4000
    assert seen == {"other": None, "inside": 0x5000}


def test_stream_restored_when_the_body_raises():
    with pytest.raises(KeyError):
        with tet.stream(0x1000):
            raise KeyError("x")
    assert tet.current_stream() is None


@pytest.mark.parametrize("bad", [True, -1, "stream", 1.0, object()])
def test_not_a_stream(bad):
    with pytest.raises(tet.InvalidArgumentError):
        tet.stream(bad)


def test_scope_entered_twice_and_out_of_order():
    s = tet.stream(0x1000)
    with s:
        with pytest.raises(tet.InvalidStateError, match="already entered"):
            s.__enter__()
    outer, inner = tet._C._StreamGuard(1), tet._C._StreamGuard(2)
    outer.enter()
    inner.enter()
    with pytest.raises(tet.InvalidStateError, match="innermost first"):
        outer.exit()
    inner.exit()
    outer.exit()
    assert tet.current_stream() is None


def test_guard_exited_on_another_thread_is_refused():
    g = tet._C._StreamGuard(0x1000)
    g.enter()
    errors = []

    def other():
        try:
            g.exit()
        except tet.InvalidStateError as e:
            errors.append(str(e))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert errors and "thread that entered it" in errors[0]
    assert tet.current_stream() == 0x1000
    g.exit()
    assert tet.current_stream() is None


def test_stream_object():
    s = tet.Stream(1234)
    assert int(s) == 1234 and s.handle == 1234 and s.__cuda_stream__() == (0, 1234)
    with tet.stream(s):
        assert tet.current_stream() == 1234


def test_cpu_program_under_a_stream(programs):
    p = tet.load(programs / "cpu_add.pte")
    x, y = xy()
    with tet.stream(0):
        np.testing.assert_allclose(p.forward(x, y)[0], x + y, rtol=1e-6)


# ---- no GPU ------------------------------------------------------------------------------------

@no_gpu_only
def test_split_device_without_a_gpu():
    with pytest.raises(tet.NoDeviceError):
        tet.split_device(0, [32], keep_remainder=True)


@no_gpu_only
def test_limits_without_a_gpu():
    with pytest.raises(tet.NoDeviceError):
        tet.green_context_limits(0)


@no_gpu_only
def test_delegate_call_without_a_gpu(programs, plugin):
    p = tet.load(programs / "fake.pte")  # a method loads without a GPU
    x, y = xy()
    with pytest.raises(tet.NoDeviceError, match="TensorRTBackend execute"):
        p.forward(x, y)


def test_negative_sm_count():
    with pytest.raises(tet.InvalidArgumentError):
        tet.split_device(0, [-8])


# ---- partition plans ---------------------------------------------------------------------------

PLAN = """{"format": "trtet-partition-plan", "version": 1,
 "gpu": {"name": "NVIDIA H200", "sm_count": 132, "min_partition": 8, "alignment": 8, "granularity": 8,
         "max_partitioned_sms": 120},
 "partitions": [{"name": "latency", "sms": 8, "p99_target_us": 250, "min_calls_per_s": 0, "p99_alone_us": 200,
                 "p99_beside_us": 242, "program": "a.pte"},
                {"name": "compute", "sms": 32, "p99_target_us": 250, "min_calls_per_s": 0, "p99_alone_us": 0,
                 "p99_beside_us": 0, "program": ""}],
 "remainder": "rest"}"""


def test_plan_round_trip(tmp_path):
    try:
        plan = tet.parse_partition_plan(PLAN)
    except tet.InvalidArgumentError as e:
        pytest.fail(f"the plan text of this test does not parse: {e}")
    assert plan.any_device and len(plan.devices) == 1 and plan.devices[0].device == -1
    one = plan.devices[0]
    assert [p["name"] for p in one.partitions] == ["latency", "compute"]
    assert one.total_sms == 40 and one.remainder_name == "rest" and one.gpu["sm_count"] == 132
    f = tmp_path / "plan.json"
    f.write_text(plan.to_json())
    again = tet.read_partition_plan(f)
    assert again.to_json() == plan.to_json()


@pytest.mark.parametrize("text,pattern", [("{", "partition plan"), ('{"format": "x"}', "partition plan"),
                                          ("[]", "partition plan")])
def test_bad_plan(text, pattern):
    with pytest.raises(tet.InvalidArgumentError, match=pattern):
        tet.parse_partition_plan(text)


def test_plan_file_missing(tmp_path):
    with pytest.raises(tet.InvalidArgumentError):
        tet.read_partition_plan(tmp_path / "none.json")


@no_gpu_only
def test_apply_plan_without_a_gpu():
    with pytest.raises(tet.NoDeviceError):
        tet.apply_partition_plan(tet.parse_partition_plan(PLAN), 0)


# ---- profiling ---------------------------------------------------------------------------------

def test_etdump_of_a_cpu_program(programs, tmp_path):
    if not tet._C.HAVE_ETDUMP:
        pytest.skip("this build has no ETDump library")
    dump = tmp_path / "run.etdp"
    p = tet.load(programs / "cpu_add.pte", etdump=dump)
    x, y = xy()
    for _ in range(3):
        p.forward(x, y)
    assert p.flush_profiling() == 0  # no delegate call is pending
    assert p.write_etdump() == 0
    assert dump.stat().st_size > 0
    with pytest.raises(tet.InvalidStateError, match="ETDump was written"):
        p.forward(x, y)


def test_etdump_written_at_close(programs, tmp_path):
    if not tet._C.HAVE_ETDUMP:
        pytest.skip("this build has no ETDump library")
    dump = tmp_path / "close.etdp"
    p = tet.load(programs / "cpu_add.pte", etdump=dump)
    p.forward(*xy())
    p.close()
    assert dump.stat().st_size > 0


def test_flush_without_a_tracer(programs):
    p = tet.load(programs / "cpu_add.pte")
    with pytest.raises(tet.InvalidStateError, match="without etdump"):
        p.flush_profiling()
