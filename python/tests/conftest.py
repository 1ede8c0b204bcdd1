"""Fixtures of the Python suites.

Environment (scripts/test-python and scripts/gpu-python set them):
  TRTET_PYTHON_TEST_PROGRAMS  the folder of the test programs (a build's python/test_programs)
  TRTET_TEST_ENGINES_PLUGIN   libtrtet_test_engines_plugin.so of the same build (GPU runs); loaded
                              after the package, so it binds to the backend library already loaded
"""

from __future__ import annotations

import ctypes
import os
import pathlib

import pytest

import torchtrt_executorch as tet


def _gpu_reason():
    try:
        tet.green_context_limits(0)
        return None
    except tet.NoDeviceError as e:
        return f"no GPU: {e}"
    except tet.Error as e:  # a GPU without green contexts still runs the rest
        return None if e.code == "NotSupported" else f"no GPU: {e}"


GPU_REASON = _gpu_reason()
HAVE_GPU = GPU_REASON is None


@pytest.fixture(scope="session")
def programs() -> pathlib.Path:
    d = os.environ.get("TRTET_PYTHON_TEST_PROGRAMS")
    if not d or not pathlib.Path(d, "cpu_add.pte").is_file():
        pytest.skip("no test programs: set TRTET_PYTHON_TEST_PROGRAMS to a build's python/test_programs "
                    "(pip install . -C cmake.define.TRTET_PYTHON_TEST_PROGRAMS=ON -C build-dir=..., as scripts/test-python does)")
    return pathlib.Path(d)


class Plugin:
    """The test engines (tests/engines/plugin.cpp) through their C interface."""

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        self.lib.trtet_test_engines_last_error.restype = ctypes.c_char_p
        self.lib.trtet_test_engines_sms.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]

    def check(self, rc: int) -> int:
        if rc < 0:
            raise RuntimeError(self.lib.trtet_test_engines_last_error().decode())
        return rc

    def install(self) -> None:
        self.check(self.lib.trtet_test_engines_install())

    def clear_sms(self) -> None:
        self.check(self.lib.trtet_test_engines_clear_sms())

    def sms(self) -> list:
        buf = (ctypes.c_int * 4096)()
        n = self.check(self.lib.trtet_test_engines_sms(buf, 4096))
        return list(buf[:min(n, 4096)])


@pytest.fixture(scope="session")
def plugin() -> Plugin:
    path = os.environ.get("TRTET_TEST_ENGINES_PLUGIN")
    if not path or not os.path.isfile(path):
        pytest.skip("no test engines: set TRTET_TEST_ENGINES_PLUGIN to a test build's libtrtet_test_engines_plugin.so "
                    "(scripts/gpu-python builds it)")
    p = Plugin(path)
    p.install()
    return p


@pytest.fixture(scope="session")  # session: decided before the module-scoped torch/cupy imports
def gpu():
    if not HAVE_GPU:
        pytest.skip(GPU_REASON)


# torch and cupy for the GPU tests that use them: imported on first use (after the gpu fixture has
# decided), skipping the test where the package is not installed.
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cupy():
    return pytest.importorskip("cupy")
