"""ExecuTorch's own Python runtime (executorch.runtime) with the package imported: "TensorRTBackend"
registered where Runtime.get() looks, a CPU-only program run through it, a TensorRT-delegated
program refused with the project's message where it cannot run.

Needs the executorch package and the torch its _C was built against (the wheel does not declare
it; docs/PYTHON.md says which and what it costs); skips with the import's error otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import torchtrt_executorch as tet


@pytest.fixture(scope="module")
def runtime():
    import importlib.util
    if importlib.util.find_spec("executorch") is None:
        pytest.skip("no executorch package installed")
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed: ExecuTorch 1.5.1's _C needs torch 2.14.1 "
                    "(scripts/test-python installs it with TRTET_PYTHON_STOCK_RUNTIME=1)")
    try:
        from executorch.runtime import Runtime
    except Exception as e:  # ImportError, or OSError from a libtorch of another version
        pytest.skip(f"ExecuTorch's Python runtime does not import here: {type(e).__name__}: {e}")
    return Runtime.get()


def test_one_executorch_runtime_in_the_process(runtime):
    maps = open("/proc/self/maps").read().splitlines()
    libs = {line.split()[-1] for line in maps if line.endswith("/libexecutorch.so")}
    assert len(libs) == 1, f"two ExecuTorch runtimes are loaded: {libs}"
    backends = {line.split()[-1] for line in maps if "libtorchtrt_executorch_backend" in line}
    assert len(backends) == 1, backends


def test_backend_registered_in_the_stock_runtime(runtime):
    assert runtime.backend_registry.is_available("TensorRTBackend")
    assert "TensorRTBackend" in runtime.backend_registry.registered_backend_names


def test_cpu_program_runs_in_the_stock_runtime(runtime, programs):
    torch = pytest.importorskip("torch")
    program = runtime.load_program(str(programs / "cpu_add.pte"))
    method = program.load_method("forward")
    x, y = torch.ones(8, 64), torch.full((8, 64), 2.0)
    (out,) = method.execute([x, y])
    torch.testing.assert_close(out, x + y)


def test_delegated_program_without_a_gpu_in_the_stock_runtime(runtime, programs):
    # In a process of its own without the test engines: this build has no TensorRT adapter, so the
    # delegate's init refuses, and ExecuTorch's runtime reports it; the project's message is on stderr.
    code = ("import sys, torchtrt_executorch\n"
            "from executorch.runtime import Runtime\n"
            "program = Runtime.get().load_program(sys.argv[1])\n"
            "try:\n    program.load_method('forward')\nexcept Exception as e:\n    print('refused:', type(e).__name__)\n")
    env = {k: v for k, v in os.environ.items() if k != "TRTET_TEST_ENGINES_AUTOINSTALL"}
    r = subprocess.run([sys.executable, "-c", code, str(programs / "elementwise.pte")], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.stdout.startswith("refused:"), (r.stdout, r.stderr[-2000:])
    assert "TensorRTBackend init: NotSupported: no engine factory is installed" in r.stderr
