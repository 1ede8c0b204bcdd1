"""The real Triton server for the backend's tests: started on 127.0.0.1 (free ports), with the project's
backend in a backend directory of the test's own, and stopped by its process id (SIGTERM, a bounded
wait, then SIGKILL). Model repositories are written by the tests (make_model).

Paths come from the environment (scripts/test-triton and scripts/gpu-triton set them):
  TRTET_TRITONSERVER     the tritonserver binary, where the nvidia-pytriton wheel put it
  TRTET_TRITON_BACKENDS  a backend directory holding torchtrt_executorch/ (cmake --install's backends/)
  TRTET_TRITON_PROGRAMS  the test programs (<build>/triton/programs)
  TRTET_TRITON_PRELOAD   optional: LD_PRELOAD for the server (the test-engine plugin)
  TRTET_TRITON_REPORT    optional: a file the tests append what they measured to (report()), which
                         scripts/gpu-triton prints after the tests
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

BACKEND = "torchtrt_executorch"
# The host cores every Server started from now on runs on (None: wherever the OS puts it). Set with
# split_host_cores, which puts this process and the load generators it starts on the others.
SERVER_CPUS = None


def report(test, text):
    """A figure a passing test measured (pytest keeps a passing test's output to itself): printed, and
    appended as "<test>: <text>" to $TRTET_TRITON_REPORT where that is set."""
    print(f"{test}: {text}", flush=True)
    path = os.environ.get("TRTET_TRITON_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(f"{test}: {text}\n")


class Terminated(BaseException):
    """SIGTERM reached a bench that called stop_on_sigterm (Note [a bench stopped by its timeout])."""


# Note [a bench stopped by its timeout]
# -------------------------------------
# scripts/gpu-triton runs each bench under `timeout`, which sends SIGTERM. Python's default action for
# it ends the process at once, with no `finally` run: S50's perf bench, stopped that way in its MPS
# layout, left nothing to stop its two servers and the aggressor's perf_analyzer (each in a session of
# its own; the aggressor with 100 million requests to send) or the MPS control daemon, and the runs
# after it on that machine were disturbed. A bench calls stop_on_sigterm() first: the signal raises Terminated in the main thread,
# a BaseException that no `except Exception` takes, so each `finally` on the way out stops what it
# started (servers, load generators, the MPS daemon). A second SIGTERM is ignored, so that the
# clean-up is not cut short; gpu-triton's `timeout -k` kills a bench that still has not ended.
def stop_on_sigterm():
    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated(f"stopped by signal {signum} (SIGTERM)")
    signal.signal(signal.SIGTERM, terminate)


class Unavailable(Exception):
    """What a helper needs is not on this machine; the message says what."""


# The stub's interpreter reads no PYTHONPATH: the model finds numpy where this process found it.
PYTHON_LATENCY_MODEL = """
import sys
sys.path.insert(0, {numpy_dir!r})
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        answers = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "input_0").as_numpy()
            y = pb_utils.get_input_tensor_by_name(request, "input_1").as_numpy()
            answers.append(pb_utils.InferenceResponse([pb_utils.Tensor("output_0", (2 * x - 0.5 * y).astype(np.float32))]))
        return answers
"""


def python_backend_models(root, names, shape):
    """Models named `names` in <root>/repo, each with the perf bench's latency model's inputs and output
    (input_0, input_1 -> output_0 = 2 * input_0 - 0.5 * input_1, float32 of `shape`: perf_bench.SHAPE),
    served by Triton's Python backend on the CPU: no GPU needed, so that the benches' load generators run against the real
    server anywhere. The backend goes to <root>/backends/python with the stub for this Python. Returns
    the environment a Server needs for it (TRTET_TRITON_BACKENDS, LD_LIBRARY_PATH); raises Unavailable
    where this server carries no such backend or its stub cannot start."""
    tritonserver = os.path.dirname(os.path.dirname(env_path("TRTET_TRITONSERVER")))
    python_backend = os.path.join(tritonserver, "backends", "python")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = os.path.join(tritonserver, "python_backend_stubs", version, "triton_python_backend_stub")
    if not (os.path.isdir(python_backend) and os.path.exists(stub)):
        raise Unavailable(f"this server carries no Python backend for Python {version} (scripts/install-triton "
                          f"--trimmed leaves it out)")
    libs = os.path.join(os.path.dirname(os.path.dirname(tritonserver)), "nvidia_pytriton.libs")  # the stub's CUDA runtime
    linked = subprocess.run(["ldd", stub], capture_output=True, text=True,
                            env=dict(os.environ, LD_LIBRARY_PATH=libs)).stdout
    missing = [line.split()[0] for line in linked.splitlines() if "not found" in line]
    if missing:
        raise Unavailable(f"the Python backend's stub cannot start here: {', '.join(missing)} not found "
                          f"(scripts/install-deps installs libpython3.11)")
    import numpy as np  # where the model's stub finds it
    backends = os.path.join(root, "backends")
    shutil.copytree(python_backend, os.path.join(backends, "python"))
    shutil.copy(stub, os.path.join(backends, "python", "triton_python_backend_stub"))
    dims = ", ".join(map(str, shape))
    for name in names:
        model = os.path.join(root, "repo", name)
        os.makedirs(os.path.join(model, "1"))
        with open(os.path.join(model, "config.pbtxt"), "w") as f:
            f.write('backend: "python"\nmax_batch_size: 0\n'
                    f'input [ {{ name: "input_0" data_type: TYPE_FP32 dims: [ {dims} ] }}, '
                    f'{{ name: "input_1" data_type: TYPE_FP32 dims: [ {dims} ] }} ]\n'
                    f'output [ {{ name: "output_0" data_type: TYPE_FP32 dims: [ {dims} ] }} ]\n'
                    'instance_group [ { kind: KIND_CPU count: 1 } ]\n')
        with open(os.path.join(model, "1", "model.py"), "w") as f:
            f.write(PYTHON_LATENCY_MODEL.format(numpy_dir=os.path.dirname(os.path.dirname(np.__file__))))
    previous = os.environ.get("LD_LIBRARY_PATH")
    return {"TRTET_TRITON_BACKENDS": backends, "LD_LIBRARY_PATH": libs + (":" + previous if previous else "")}


def rss_mib(pid):
    """The resident memory of process `pid`, MiB (/proc; OSError where it cannot be read)."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def env_path(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set (scripts/test-triton sets it)")
    return value


def program(name):
    path = os.path.join(env_path("TRTET_TRITON_PROGRAMS"), name + ".pte")
    if not os.path.isfile(path):
        raise RuntimeError(f"test program {path} is missing (build target trtet_triton_programs)")
    return path


def free_ports(count):
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def parameters_text(parameters):
    return "".join(
        f'parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}\n' for k, v in parameters.items())


def make_model(repo, name, pte=None, config=None, parameters=None, extra=""):
    """<repo>/<name>/config.pbtxt and, when `pte` names a test program, <repo>/<name>/1/model.pte."""
    os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
    if pte is not None:
        with open(program(pte), "rb") as src, open(os.path.join(repo, name, "1", "model.pte"), "wb") as dst:
            dst.write(src.read())
    text = config if config is not None else f'backend: "{BACKEND}"\n'
    text += parameters_text(parameters or {}) + extra
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write(text)


def metric_value(text, family, model=None, **labels):
    """The sum of `family`'s series in a /metrics page whose labels include model=`model` (any model
    when None) and `labels`; None when there is none."""
    wanted = ([f'model="{model}"'] if model is not None else []) + [f'{k}="{v}"' for k, v in labels.items()]
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith(family + "{") and all(w in line for w in wanted)]
    return sum(values) if values else None


def host_core_split(available, client_cores):
    """(server cores, client cores): the last `client_cores` of the cores this process may use go to
    the load generators, the rest to the server. At least one core each side."""
    cores = sorted(available)
    if client_cores < 1 or client_cores > len(cores) - 1:
        raise ValueError(f"{client_cores} client cores of {len(cores)}: it takes 1 to {len(cores) - 1}")
    return set(cores[:-client_cores]), set(cores[-client_cores:])


def split_host_cores(client_cores):
    """Runs this process (the bench, its client threads and every perf_analyzer it starts) on its last
    `client_cores` cores and every Server started after this on the others, so load generators on the
    server's machine take no core the server runs on. Returns (server cores, client cores)."""
    global SERVER_CPUS
    server, client = host_core_split(os.sched_getaffinity(0), client_cores)
    os.sched_setaffinity(0, client)
    SERVER_CPUS = server
    return server, client


def cores_text(cores):
    return ",".join(str(c) for c in sorted(cores))


def server_pin():
    """The command prefix that runs a program on the server's cores (split_host_cores); [] when unsplit."""
    return [] if SERVER_CPUS is None else ["taskset", "-c", cores_text(SERVER_CPUS)]


class Server:
    """One tritonserver process in explicit model-control mode (models are loaded by the tests)."""

    def __init__(self, repo, env=None, args=()):
        self.repo = repo
        self.binary = env_path("TRTET_TRITONSERVER")
        self.backends = env_path("TRTET_TRITON_BACKENDS")
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        self.log_path = os.path.join(tempfile.mkdtemp(prefix="trtet-triton-log-"), "server.log")
        command = [
            self.binary, f"--model-repository={repo}", f"--backend-directory={self.backends}",
            "--model-control-mode=explicit", "--http-address=127.0.0.1", f"--http-port={self.http_port}",
            "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}", "--metrics-address=127.0.0.1",
            f"--metrics-port={self.metrics_port}", "--allow-gpu-metrics=false", "--exit-timeout-secs=5",
            "--strict-readiness=false", "--log-verbose=0", *args]
        command = server_pin() + command  # (split_host_cores) every thread it makes inherits the cores
        environment = dict(os.environ)
        # Every symbol the backend takes from the server resolves as it loads (a declaration the
        # server lacks fails the load, not a later call).
        environment["LD_BIND_NOW"] = "1"
        if os.environ.get("TRTET_TRITON_PRELOAD"):
            environment["LD_PRELOAD"] = os.environ["TRTET_TRITON_PRELOAD"]
        environment.update(env or {})
        self.log_file = open(self.log_path, "w")
        # Started where the wheel put it (it finds its libraries relative to itself).
        self.process = subprocess.Popen(command, stdout=self.log_file, stderr=subprocess.STDOUT, env=environment,
                                        cwd=os.path.dirname(self.binary), start_new_session=True)
        self.url = f"127.0.0.1:{self.http_port}"
        self.client = httpclient.InferenceServerClient(self.url, network_timeout=120.0, connection_timeout=60.0)
        self._wait_ready(90.0)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tritonserver exited ({self.process.returncode}):\n{self.log()[-4000:]}")
            try:
                if self.client.is_server_ready():
                    return
            except Exception:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"tritonserver not ready after {timeout} s:\n{self.log()[-4000:]}")

    def log(self):
        self.log_file.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def load(self, name):
        """None when the model loads, else the server's message."""
        try:
            self.client.load_model(name)
            return None
        except InferenceServerException as e:
            return str(e)

    def unload(self, name):
        """Unloads `name` and waits until the server reports it unloaded (its instances and model
        finalized, so what it held, such as a device's split, is released)."""
        self.client.unload_model(name)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = {m["name"]: m.get("state", "") for m in self.client.get_model_repository_index()}
            if states.get(name) not in ("READY", "UNLOADING", "LOADING"):
                return
            time.sleep(0.05)
        raise RuntimeError(f"{name} still loaded after 30 s")

    def metrics_text(self):
        """The server's /metrics page, as text."""
        import urllib.request
        return urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=30).read().decode()

    def metric(self, family, model=None, text=None, **labels):
        """The value of `family`'s series for `model` whose labels include `labels`, on the server's
        /metrics endpoint (or in `text`, a page read before), summed over the model's instances (every
        series of the family when `model` is None); None when there is no such series."""
        return metric_value(self.metrics_text() if text is None else text, family, model, **labels)

    def stop(self):
        """SIGTERM to the server's pid, a bounded wait, then SIGKILL. Returns the exit status.

        The harness's own HTTP connection is closed first: the server waits for open HTTP connections
        until its exit timeout, and a server that reaches the timeout with a model still loaded exits
        at once, without finalizing the backends (so nothing the backend does at its finalize, such as
        stopping the threads that keep cores awake, would be seen)."""
        try:
            self.client.close()
        except Exception:
            pass
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log_file.close()
        return self.process.returncode


def gpu_count():
    """CUDA devices this machine has (0 without one): cupy's count where cupy is installed, else nvidia-smi's."""
    try:
        import cupy
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.SubprocessError):
        return 0


def cuda_region_array(count, dtype="float32", values=None):
    """A cupy array of `count` elements for a CUDA shared-memory region, in an allocation of its own
    (cudaMalloc, freed with the array), on the current device; `values` (a numpy array) copied in.

    A region is registered by its CUDA IPC handle, and a handle names the start of the allocation it
    was taken from: the server maps that start. An array from cupy's pool may lie at an offset in a
    larger allocation (a block freed by an earlier test, split), so its region would be other memory
    (the outputs written elsewhere, the inputs read from elsewhere)."""
    import cupy
    import numpy as np
    memory = cupy.cuda.memory.Memory(count * np.dtype(dtype).itemsize)
    array = cupy.ndarray((count,), dtype, cupy.cuda.MemoryPointer(memory, 0))
    if values is None:
        array.fill(0)
    else:
        array.set(np.ascontiguousarray(values, dtype=dtype).ravel())
    return array


def write_plan(path, partitions, remainder="", gpu=None):
    """A trtet-partition-plan file (docs/PLANNING.md): `partitions` as (name, sms); plan_dict's plan."""
    with open(path, "w") as f:
        json.dump(plan_dict(partitions, remainder, gpu), f)


def plan_dict(partitions, remainder="", gpu=None):
    """A trtet-partition-plan as a dict (what write_plan writes)."""
    gpu = gpu or {"name": "NVIDIA H200", "sm_count": 132, "min_partition": 8, "alignment": 8, "granularity": 8,
                  "max_partitioned_sms": 120}
    plan = {"format": "trtet-partition-plan", "version": 1, "gpu": gpu,
            "partitions": [{"name": n, "sms": s, "p99_target_us": 1000.0, "min_calls_per_s": 0.0,
                            "p99_alone_us": 0.0, "p99_beside_us": 0.0, "program": ""} for n, s in partitions]}
    if remainder:
        plan["remainder"] = remainder
    return plan


def plan_set_dict(plans, gpu=None):
    """A trtet-plan-set (docs/PLANNING.md, "Plan sets") as a dict: `plans` is a list of (name,
    partitions as (model, sms), remainder or "", curves: {model: [(rate_per_s, p99_us), ...]} or None)."""
    gpu = gpu or plan_dict([])["gpu"]
    out = {"format": "trtet-plan-set", "version": 1, "gpu": gpu, "plans": []}
    for name, partitions, remainder, curves in plans:
        plan = {"name": name, "partitions": plan_dict(partitions)["partitions"]}
        if remainder:
            plan["remainder"] = remainder
        if curves:
            plan["curves"] = {m: [{"rate_per_s": r, "p99_us": p} for r, p in points] for m, points in curves.items()}
        out["plans"].append(plan)
    return out


def write_plan_set(path, plans, gpu=None):
    """A trtet-plan-set file (plan_set_dict's)."""
    with open(path, "w") as f:
        json.dump(plan_set_dict(plans, gpu), f)


def write_plans(path, devices):
    """A trtet-partition-plans file (several GPUs, docs/PLANNING.md): `devices` maps each device index
    to its plan (a plan_dict), as trtet-plan --merge writes it."""
    with open(path, "w") as f:
        json.dump({"format": "trtet-partition-plans", "version": 1,
                   "devices": [{"device": d, "plan": devices[d]} for d in sorted(devices)]}, f)


def gpu_plan_fields(device=0):
    """The plan's "gpu" fields for `device` of this machine, as the library reads them (plan_gpu():
    name, SM count, partition limits), printed by trtet_triton_plan_gpu (TRTET_TRITON_PLAN_GPU)."""
    out = subprocess.run([env_path("TRTET_TRITON_PLAN_GPU"), str(device)], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"trtet_triton_plan_gpu: {out.stderr.strip()}")
    return json.loads(out.stdout)
