"""The backend in the real Triton server (nvidia-pytriton's 2.51.0), through tritonclient.

Without a GPU: the server starts with the backend, every bad config is refused with its reason, and a
good config is refused because there is no GPU, with the backend's message; the GPU cases skip, saying
why. On a GPU: the same configs, plus models that load and serve (host and device I/O, statistics, a
failed request leaving the instance serving, partitions shared by plan, device indices).
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

import harness

GPUS = harness.gpu_count()
needs_gpu = pytest.mark.skipif(GPUS == 0, reason="needs a CUDA GPU (this machine has none)")
needs_no_gpu = pytest.mark.skipif(GPUS > 0, reason="checks the refusal on a machine without a GPU")

# The test programs (triton/CMakeLists.txt): float32 x, y [8, 64] -> out [8, 64].
SMALL_IO = """
input [ { name: "input_0" data_type: TYPE_FP32 dims: [ 8, 64 ] },
        { name: "input_1" data_type: TYPE_FP32 dims: [ 8, 64 ] } ]
output [ { name: "output_0" data_type: TYPE_FP32 dims: [ 8, 64 ] } ]
"""


@pytest.fixture(scope="module")
def repo():
    return tempfile.mkdtemp(prefix="trtet-triton-repo-")


@pytest.fixture(scope="module")
def server(repo):
    s = harness.Server(repo)
    yield s
    status = s.stop()
    assert status is not None, "the server did not stop"


def refused(server, name):
    message = server.load(name)
    assert message is not None, f"model {name} loaded; it should have been refused"
    return message


def test_backend_symbols_resolve_from_the_server():
    # Every TRITONSERVER_/TRITONBACKEND_ function the backend declares and calls is one the server's
    # library defines (the backend never links it: undefined here, defined there).
    backend = os.path.join(harness.env_path("TRTET_TRITON_BACKENDS"), harness.BACKEND,
                           "libtriton_torchtrt_executorch.so")
    libs = os.path.join(os.path.dirname(harness.env_path("TRTET_TRITONSERVER")), "..", "..", "..",
                        "nvidia_pytriton.libs")
    server_lib = [f for f in os.listdir(libs) if f.startswith("libtritonserver")]
    assert len(server_lib) == 1, server_lib
    undefined = subprocess.run(["nm", "-D", "--undefined-only", backend], capture_output=True, text=True,
                               check=True).stdout
    defined = subprocess.run(["nm", "-D", "--defined-only", os.path.join(libs, server_lib[0])],
                             capture_output=True, text=True, check=True).stdout
    used = {line.split()[-1] for line in undefined.splitlines() if re.search(r"\bTRITON(SERVER|BACKEND)_", line)}
    offered = {line.split()[-1] for line in defined.splitlines()}
    assert len(used) > 30, used
    assert used <= offered, f"not in the server: {sorted(used - offered)}"
    needed = subprocess.run(["readelf", "-d", backend], capture_output=True, text=True, check=True).stdout
    assert "libtritonserver" not in needed
    assert "RUNPATH" in needed and "$ORIGIN" in needed


def test_server_is_ready_and_loads_the_backend(server, repo):
    harness.make_model(repo, "probe", pte="triton_small")
    message = server.load("probe")
    assert server.client.is_server_ready()
    assert "backend 'torchtrt_executorch' ready (backend API 1.19" in server.log()
    # The engine GPU time's metric families were made (the server has metrics): no refusal logged.
    assert "engine GPU time not reported" not in server.log()
    if GPUS == 0:
        assert message is not None
    else:
        # The fake engine builds nothing a GPU runs; its load reaches the delegate (the message is the
        # delegate's) or loads: either way past every config check.
        assert message is None or "torchtrt_executorch" in message, message


@needs_no_gpu
def test_load_without_a_gpu_is_refused_with_the_reason(server, repo):
    harness.make_model(repo, "no_gpu", pte="triton_small")
    message = refused(server, "no_gpu")
    assert "Unsupported: torchtrt_executorch: model 'no_gpu' needs a CUDA GPU and this machine has none usable" in message
    assert "runs on a GPU only" in message
    # The inputs and outputs were read from the program before the GPU was asked for.
    assert "model 'no_gpu': inputs and outputs auto-completed from the program" in server.log()


def test_missing_program_is_refused(server, repo):
    harness.make_model(repo, "no_program")
    message = refused(server, "no_program")
    assert "Not found: torchtrt_executorch: model 'no_program' version 1 has no program" in message
    assert "no_program/1/model.pte is missing" in message


def test_a_program_that_is_not_a_pte_is_refused(server, repo):
    harness.make_model(repo, "not_pte")
    with open(os.path.join(repo, "not_pte", "1", "model.pte"), "wb") as f:
        f.write(b"this is not a flatbuffer" * 10)
    message = refused(server, "not_pte")
    assert "torchtrt_executorch: loading the program" in message and "ExecuTorch error" in message


def test_damaged_programs_are_refused_and_the_server_stays_up(server, repo):
    # Note [verifying a program] (model.h): a program whose flatbuffer is damaged is refused by the
    # verifier before anything of it is read. With ExecuTorch's default verification (the header
    # only), about one in four of these damages crashed the process reading the method's metadata.
    with open(harness.program("triton_small"), "rb") as f:
        original = f.read()
    rng = random.Random(54)
    at_load = 0
    for k in range(40):
        damaged = bytearray(original)
        for _ in range(4):  # four bytes of the flatbuffer's first 4 KiB, past the file's header
            damaged[8 + rng.randrange(min(len(damaged), 4096) - 8)] = rng.randrange(256)
        name = f"damaged_{k}"
        harness.make_model(repo, name)
        with open(os.path.join(repo, name, "1", "model.pte"), "wb") as f:
            f.write(damaged)
        message = server.load(name)
        assert server.process.poll() is None, f"the server ended loading damaged program {k}: {server.log()[-2000:]}"
        if message is not None and "loading the program" in message:
            at_load += 1
        if message is None:  # a damage the program does not notice (a byte of its data): not kept loaded
            server.unload(name)
    assert server.client.is_server_ready()
    assert at_load >= 20, at_load  # most are refused by the verifier itself
    # What ExecuTorch logs about a damaged program (a backend id, a name) is the program's bytes, and
    # goes into the refusal that the repository index carries: the index must stay JSON a client reads.
    index = server.client.get_model_repository_index()
    assert sum(m["name"].startswith("damaged_") for m in index) == 40, index
    assert not any(m["name"].startswith("damaged_") and m.get("state") == "READY" for m in index), index


def test_a_refusal_cut_at_the_message_limit_keeps_the_repository_index_readable(server, repo):
    # Note [untrusted text in messages]: a refusal longer than the limit (16 KiB) is cut, never inside
    # a character, so the refusal Triton keeps in its repository index (JSON) stays valid UTF-8 and
    # the index readable. 400 unknown keys of 20 three-byte characters each, after a first key of 1, 2
    # or 3 bytes: the three refusals put the cut at each place within a character.
    keys = {f"k{i:03d}" + "\u4e2d" * 20: "1" for i in range(400)}
    for first in ("a", "ab", "abc"):
        name = "long_" + first
        harness.make_model(repo, name, pte="triton_small", parameters=dict({first: "1"}, **keys))
        message = refused(server, name)
        assert f"unknown parameters '{first}', 'k000\u4e2d\u4e2d" in message and "..." in message, message[:300]
    index = server.client.get_model_repository_index()  # the whole index as JSON, decoded as UTF-8
    reasons = {m["name"]: m.get("reason", "") for m in index}
    for first in ("a", "ab", "abc"):
        assert "\u4e2d..." in reasons["long_" + first], reasons["long_" + first][-60:]


def _u32(b, at):
    return int.from_bytes(b[at:at + 4], "little")


def _target(b, table, field):  # where offset field `field` of the table at `table` points
    vtable = table - int.from_bytes(b[table:table + 4], "little", signed=True)
    o = int.from_bytes(b[vtable + 4 + 2 * field:vtable + 6 + 2 * field], "little")
    return table + o + _u32(b, table + o), table + o


def test_a_program_whose_input_has_a_type_executorch_does_not_know_is_refused(server, repo):
    # Note [verifying a program]: ExecuTorch's verifier lets an unknown scalar type through on a
    # dynamic tensor, and MethodMeta aborts the process on it; the backend reads the type first.
    with open(harness.program("triton_small"), "rb") as f:
        b = bytearray(f.read())
    plans, _ = _target(b, _u32(b, 0), 1)
    plan = plans + 4 + _u32(b, plans + 4)  # execution_plan[0]
    values, _ = _target(b, plan, 2)
    inputs, _ = _target(b, plan, 3)
    slot = values + 4 + 4 * _u32(b, inputs + 4)
    evalue = slot + _u32(b, slot)
    tensor, _ = _target(b, evalue, 1)
    vtable = tensor - int.from_bytes(b[tensor:tensor + 4], "little", signed=True)
    type_at = int.from_bytes(b[vtable + 4:vtable + 6], "little")
    assert type_at != 0 and b[tensor + type_at] == 6  # Float
    b[tensor + type_at] = (-37) & 0xFF
    harness.make_model(repo, "bad_type")
    with open(os.path.join(repo, "bad_type", "1", "model.pte"), "wb") as f:
        f.write(b)
    message = refused(server, "bad_type")
    assert server.process.poll() is None, server.log()[-2000:]
    assert "the program's input 0 has a dtype (-37) Triton cannot carry" in message, message
    assert server.client.is_server_ready()


def test_unknown_parameters_are_refused_by_name(server, repo):
    harness.make_model(repo, "unknown_params", pte="triton_small", parameters={"sm": "32", "plan": "x.json"})
    message = refused(server, "unknown_params")
    assert "Invalid argument: torchtrt_executorch: unknown parameters 'plan', 'sm'" in message


def test_a_config_cannot_forge_a_line_of_the_servers_log(server, repo):
    # Note [untrusted text in messages]: a parameter's key with a newline (protobuf's text format
    # unescapes "\\n") and a terminal escape goes out escaped, in the refusal and in the log.
    forged = "E0101 00:00:00.000000 1 forged.cc:1] forged by a config"
    harness.make_model(repo, "forging", pte="triton_small", parameters={f"k\\n{forged}\\033[2J": "1"})
    message = refused(server, "forging")
    assert f"unknown parameter 'k\\x0a{forged}\\x1b[2J'" in message, message
    assert "\n" not in message.rstrip() and "\x1b" not in message  # (Triton ends its load error with a newline)
    log = server.log()
    assert not any(line.startswith(forged) for line in log.splitlines()), "a line of the log was forged"
    assert "\x1b[2J" not in log
    # (Triton 2.51 quotes each log line's message and writes its backslashes doubled.)
    assert f"k\\x0a{forged}" in log.replace("\\\\", "\\")


def test_parameters_that_choose_code_are_refused(server, repo):
    harness.make_model(repo, "code_param", pte="triton_small", parameters={"tensorrt_runtime": "/tmp/evil.so"})
    message = refused(server, "code_param")
    assert "parameter 'tensorrt_runtime' chooses which code the server runs" in message


def test_malformed_sm_count_is_refused(server, repo):
    harness.make_model(repo, "bad_sms", pte="triton_small", parameters={"sms": "thirty"})
    assert "parameter 'sms' is 'thirty'; it takes a whole number of SMs" in refused(server, "bad_sms")


def test_malformed_gpu_time_sampling_is_refused(server, repo):
    harness.make_model(repo, "bad_every", pte="triton_small", parameters={"gpu_time_every": "often"})
    assert "parameter 'gpu_time_every' is 'often'; it takes a whole number of requests" in refused(server, "bad_every")
    harness.make_model(repo, "big_every", pte="triton_small", parameters={"gpu_time_every": "2000000"})
    assert "parameter 'gpu_time_every' is 2000000; it takes 0 to 1000000" in refused(server, "big_every")


def test_an_unknown_stream_wait_is_refused(server, repo):
    harness.make_model(repo, "bad_wait", pte="triton_small", parameters={"stream_wait": "poll"})
    assert "parameter 'stream_wait' is 'poll'; it takes sync, spin, yield or callback" in refused(server, "bad_wait")


def test_an_unknown_send_from_is_refused(server, repo):
    harness.make_model(repo, "bad_send", pte="triton_small", parameters={"send_from": "frontend"})
    assert "parameter 'send_from' is 'frontend'; it takes instance or completion_thread" in refused(server, "bad_send")


@needs_no_gpu
def test_an_optimization_priority_is_read_before_the_gpu_is_asked_for(server, repo):
    # Triton's optimization.priority (an enum Triton checks) is the backend's to read: a config with
    # it gets as far as the GPU, whose absence is the refusal, not the priority.
    harness.make_model(repo, "prio_cpu", pte="triton_small", extra="optimization { priority: PRIORITY_MAX }\n")
    message = refused(server, "prio_cpu")
    assert "needs a CUDA GPU" in message and "priority" not in message, message


def thread_cores(pid):
    """{thread id: the cores it may run on} for process `pid`'s threads (Linux takes a thread's id where
    sched_getaffinity asks for a process's); a thread that ends while they are read is left out."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            found[int(tid)] = os.sched_getaffinity(int(tid))
        except ProcessLookupError:
            continue
    return found


def awake_threads(pid):
    """The threads of process `pid` the backend keeps cores awake with: (name, policy, cores allowed)."""
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            if not name.startswith("trtet-awake-"):
                continue
            found.append((name, os.sched_getscheduler(int(tid)), os.sched_getaffinity(int(tid))))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return sorted(found)


def test_the_backend_keeps_the_cores_it_is_told_awake_while_it_is_loaded(repo):
    # Note [cores kept awake]: tritonserver --backend-config=torchtrt_executorch,keep-cores-awake=<cores>
    # reaches the backend when it loads; it starts one thread per core, pinned there at SCHED_IDLE (5),
    # and stops them when the server finalizes it.
    cores = sorted(harness.SERVER_CPUS or os.sched_getaffinity(0))
    core = cores[0]
    server = harness.Server(repo, args=[f"--backend-config=torchtrt_executorch,keep-cores-awake={core}"])
    try:
        harness.make_model(repo, "awake", pte="triton_small")
        message = server.load("awake")
        assert f"keeping 1 core(s) awake (keep-cores-awake={core})" in server.log()
        # The backend stays loaded, whether the model served or was refused (no GPU): its thread is there.
        assert message is None or "needs a CUDA GPU" in message, message
        assert awake_threads(server.process.pid) == [(f"trtet-awake-{core}", 5, {core})]
    finally:
        server.stop()
        shutil.rmtree(os.path.join(repo, "awake"), ignore_errors=True)
    with open(server.log_path, errors="replace") as f:
        log = f.read()
    assert "cores kept awake: 1 thread(s) stopped" in log, log[-3000:]


def test_a_keep_cores_awake_setting_the_backend_cannot_follow_is_refused_with_the_reason(repo):
    # A malformed list, and a core the server may not run on: the backend does not load, every model
    # that needs it is refused with the reason, and the server stays up.
    outside = max(os.cpu_count(), max(os.sched_getaffinity(0)) + 1)  # a core this machine does not have
    for value, says in (("3-1", "backend setting keep-cores-awake=3-1: the range '3-1' runs backwards"),
                        (str(outside), f"backend setting keep-cores-awake={outside}: core {outside} is not one "
                                       "this process may run on")):
        server = harness.Server(repo, args=[f"--backend-config=torchtrt_executorch,keep-cores-awake={value}"])
        try:
            harness.make_model(repo, "awake_bad", pte="triton_small")
            message = server.load("awake_bad")
            assert message is not None and says in message, message
            assert server.client.is_server_live()
            assert not awake_threads(server.process.pid)
        finally:
            server.stop()
            shutil.rmtree(os.path.join(repo, "awake_bad"), ignore_errors=True)


def test_the_perf_benchs_spinners_keep_their_cores_at_sched_idle_and_die_with_the_bench():
    # Note [the cores kept awake] in perf_bench.py: a load generator's core gets one spinner, pinned
    # there at SCHED_IDLE (5); killed with SIGKILL, the bench leaves none running.
    core = min(os.sched_getaffinity(0))
    code = ("import time, perf_bench\n"
            f"spinners = perf_bench.keep_cores_awake([{core}])\n"
            "print(' '.join(str(p.pid) for p in spinners), flush=True)\n"
            "time.sleep(60)\n")
    bench = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
    try:
        pids = [int(p) for p in bench.stdout.readline().split()]
        assert len(pids) == 1, pids
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until it has lowered itself
            policy = os.sched_getscheduler(pids[0])
            if policy == 5:
                break
            time.sleep(0.05)
        assert policy == 5, policy
        assert os.sched_getaffinity(pids[0]) == {core}
    finally:
        bench.kill()
        bench.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pids[0]}"):
        with open(f"/proc/{pids[0]}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":  # gone, its parent not yet told
                break
        time.sleep(0.05)
    else:
        assert not os.path.exists(f"/proc/{pids[0]}"), "the spinner outlived the bench"


def test_the_perf_benchs_hold_on_the_hosts_idle_states_is_in_force_while_held_and_says_why_not_otherwise():
    # perf_bench --host-idle-latency-us (Note [the host's idle states]): where the PM QoS file can be
    # written, the kernel's request reads back the value held, until the file is closed; where it cannot,
    # the bench says why instead of failing. The idle states are listed or the reason given.
    import struct
    import perf_bench
    assert perf_bench.host_idle_states()
    hold, text = perf_bench.hold_host_idle_latency(7)
    if hold is None:
        assert text.startswith("not held: /dev/cpu_dma_latency: "), text
        return
    try:
        assert text == "held at 7 us for the run (/dev/cpu_dma_latency)", text
        with open("/dev/cpu_dma_latency", "rb") as f:
            assert struct.unpack("i", f.read(4))[0] <= 7
    finally:
        hold.close()


def test_the_perf_benchs_look_at_the_host_names_a_busy_process_and_its_core():
    # Note [the host while it measures]: a process spinning on one core, its command renamed to one with
    # spaces and parentheses as /proc/<pid>/stat quotes it, is among the busiest with most of a core,
    # and that core reads busy; the text names it with its pid.
    import perf_bench
    core = max(os.sched_getaffinity(0))
    spin = ("import os, time\n"
            "open('/proc/self/comm', 'w').write('spin (a) b')\n"
            "end = time.monotonic() + 30\n"
            "while time.monotonic() < end: pass\n")
    child = subprocess.Popen([sys.executable, "-c", spin], preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    try:
        time.sleep(0.3)  # renamed and spinning
        look = perf_bench.host_look(cores=[core], seconds=0.5)
        mine = [b for b in look["busiest"] if b["pid"] == child.pid]
        assert mine and mine[0]["command"] == "spin (a) b" and mine[0]["percent"] > 50, look
        assert look["cores_busy_percent"][core] > 50, look
        assert len(look["load_average"]) == 3, look
        assert f"spin (a) b {mine[0]['percent']:.0f}% (pid {child.pid})" in perf_bench.host_look_text(look)
        # Note [time the hypervisor took]: this host's steal over the look, whatever it was
        assert 0.0 <= look["steal_percent"] <= look["steal_core_percent"] <= 100.0, look
        assert f"steal {look['steal_percent']:g}% of all cores' time" in perf_bench.host_look_text(look)
    finally:
        child.kill()
        child.wait()


@needs_no_gpu
def test_the_perf_benchs_rate_limited_instance_groups_are_a_config_triton_takes():
    # perf_bench --rate-limiter shared: the server with --rate-limit=execution_count and both models'
    # instance groups asking for the one copy of a global resource, each with its priority. Triton parses
    # and checks that config before the backend sees the model, so a refusal for the missing GPU (the
    # backend's) shows the rate limiter's text was taken. (Without a GPU Triton itself refuses a group
    # naming GPU 0, so here the group is KIND_MODEL with the same rate limiter.)
    import perf_bench
    latency = perf_bench.instance_group_text(1, "latency", rate_limited=True)
    aggressor = perf_bench.instance_group_text(1, "aggressor", rate_limited=True)
    assert 'rate_limiter { resources [ { name: "gpu" global: true count: 1 } ] priority: 1 }' in latency
    assert "priority: 8" in aggressor and "rate_limiter" not in perf_bench.instance_group_text(2, "latency")
    repo = tempfile.mkdtemp(prefix="trtet-triton-rate-")
    gpu_group = "kind: KIND_GPU count: 1 gpus: [ 0 ]"
    assert gpu_group in latency
    model_kind = latency.replace(gpu_group, "kind: KIND_MODEL count: 1")
    harness.make_model(repo, "limited", pte="triton_small", extra=model_kind)
    harness.make_model(repo, "limited_bad", pte="triton_small", extra=model_kind.replace("count: 1 }", "count: -1 }"))
    s = harness.Server(repo, args=perf_bench.RATE_LIMIT_SERVER_ARGS)
    try:
        message = refused(s, "limited")
        assert "needs a CUDA GPU" in message, message
        bad = refused(s, "limited_bad")  # a rate limiter Triton cannot read is refused by Triton
        assert "needs a CUDA GPU" not in bad and "limited_bad" in bad, bad
    finally:
        assert s.stop() is not None


def test_plan_with_sm_count_off_the_granularity_is_refused(server, repo):
    harness.make_model(repo, "plan_off", pte="triton_small", parameters={"plan_file": "plan.json"})
    harness.write_plan(os.path.join(repo, "plan_off", "plan.json"), [("plan_off", 30)])
    message = refused(server, "plan_off")
    assert "plan file" in message and "partition 'plan_off' has 30 SMs; sizes are multiples of 8" in message, message


def test_missing_plan_file_is_refused(server, repo):
    harness.make_model(repo, "plan_missing", pte="triton_small", parameters={"plan_file": "nowhere.json"})
    message = refused(server, "plan_missing")
    assert "plan_file: cannot open" in message and "nowhere.json" in message


def test_a_plan_file_that_is_a_fifo_or_a_directory_is_refused_at_once(server, repo):
    # A FIFO would hold the load until something wrote to it; a config naming one (or a device, or a
    # directory) is refused as not a regular file, without waiting on it.
    harness.make_model(repo, "plan_fifo", pte="triton_small", parameters={"plan_file": "plan.json"})
    os.mkfifo(os.path.join(repo, "plan_fifo", "plan.json"))
    started = time.monotonic()
    message = refused(server, "plan_fifo")
    assert "plan_file: " in message and "plan.json is not a regular file" in message, message
    assert time.monotonic() - started < 30
    harness.make_model(repo, "plan_dir", pte="triton_small", parameters={"plan_file": "plans"})
    os.makedirs(os.path.join(repo, "plan_dir", "plans"))
    assert "plans is not a regular file" in refused(server, "plan_dir")
    harness.make_model(repo, "set_fifo", pte="triton_small", parameters={"plan_set_file": "set.json"})
    os.mkfifo(os.path.join(repo, "set_fifo", "set.json"))
    message = refused(server, "set_fifo")
    assert "plan_set_file: " in message and "set.json is not a regular file" in message, message


def test_dynamic_tensors_are_completed_with_minus_one_and_static_ones_as_they_are(server, repo):
    # Note [dynamic shapes]: triton_small's tensors are DYNAMIC_BOUND [8, 64], triton_small_static's
    # STATIC [8, 64]; the completed config (logged before the load asks for the GPU) says so.
    harness.make_model(repo, "dyn_auto", pte="triton_small")
    harness.make_model(repo, "static_auto", pte="triton_small_static")
    for name in ("dyn_auto", "static_auto"):
        message = server.load(name)
        if GPUS == 0:
            assert message is not None and "needs a CUDA GPU" in message, message
    log = server.log()
    assert ("model 'dyn_auto': inputs and outputs auto-completed from the program: inputs input_0 TYPE_FP32 [-1, -1] "
            "(dynamic, within [8, 64]), input_1 TYPE_FP32 [-1, -1] (dynamic, within [8, 64]); outputs output_0 "
            "TYPE_FP32 [-1, -1] (dynamic, within [8, 64])") in log, log[-3000:]
    assert ("model 'static_auto': inputs and outputs auto-completed from the program: inputs input_0 TYPE_FP32 [8, 64], "
            "input_1 TYPE_FP32 [8, 64]; outputs output_0 TYPE_FP32 [8, 64]") in log, log[-3000:]


def test_programs_shaped_like_todays_exports_are_completed_from_their_planned_io(server, repo):
    # triton_boundary and triton_cpu_ops are programs as exporters write them today: inputs and output
    # planned in host memory by the program, et_copy into and out of a CUDA-planned arena around the
    # delegate, and (cpu_ops) CPU operators around that. The backend reads their I/O from the method
    # (DYNAMIC_BOUND [8, 64]: dims -1), as for any program, before the load asks for the GPU.
    for name, pte in (("boundary_auto", "triton_boundary"), ("cpu_ops_auto", "triton_cpu_ops")):
        harness.make_model(repo, name, pte=pte)
        message = server.load(name)
        if GPUS == 0:
            assert message is not None and f"model '{name}' needs a CUDA GPU" in message, message
        assert (f"model '{name}': inputs and outputs auto-completed from the program: inputs input_0 TYPE_FP32 [-1, -1] "
                "(dynamic, within [8, 64]), input_1 TYPE_FP32 [-1, -1] (dynamic, within [8, 64]); outputs output_0 "
                "TYPE_FP32 [-1, -1] (dynamic, within [8, 64])") in server.log(), server.log()[-3000:]
        if GPUS:
            server.unload(name)


def test_a_config_may_narrow_a_dynamic_tensor_within_its_bound(server, repo):
    # [-1, 64] and [4, 64] lie within the bound [8, 64]: the config checks pass (the load goes on to
    # the GPU, which a machine without one refuses).
    io = SMALL_IO.replace("dims: [ 8, 64 ] },\n", "dims: [ -1, 64 ] },\n", 1).replace(
        "dims: [ 8, 64 ] } ]\noutput", "dims: [ 4, 64 ] } ]\noutput", 1)
    assert "[ -1, 64 ]" in io and "[ 4, 64 ]" in io, io
    harness.make_model(repo, "narrowed", pte="triton_small", config=f'backend: "torchtrt_executorch"\n{io}')
    message = server.load("narrowed")
    if GPUS == 0:
        assert message is not None and "model 'narrowed' needs a CUDA GPU" in message, message


def test_inputs_with_dims_beyond_the_bound_or_another_rank_are_refused(server, repo):
    io = SMALL_IO.replace("dims: [ 8, 64 ] },\n", "dims: [ 8, 128 ] },\n", 1)
    harness.make_model(repo, "bad_dims", pte="triton_small", config=f'backend: "torchtrt_executorch"\n{io}')
    message = refused(server, "bad_dims")
    assert ("input 'input_0' has dims [8, 128] in the config; the program's tensor is dynamic with 2 dims bounded by "
            "[8, 64]") in message, message
    io = SMALL_IO.replace("dims: [ 8, 64 ] },\n", "dims: [ 8, 64, 1 ] },\n", 1)
    harness.make_model(repo, "bad_rank", pte="triton_small", config=f'backend: "torchtrt_executorch"\n{io}')
    assert "input 'input_0' has dims [8, 64, 1] in the config" in refused(server, "bad_rank")


def test_a_model_refused_again_and_again_keeps_no_host_memory(server, repo):
    # Every bad input leaves everything intact, memory included: a config the program refuses (dims past
    # its bound, refused after the backend has read the program and its metadata) loaded 250 times,
    # the config edited each time so that the server asks the backend again. After 50 (the server's own
    # one-time memory), the server's RSS grows by at most 1 MiB over 200 more: a leak of 8 KiB a load
    # would show as 1.6 MiB. The refusal is the backend's, every time.
    io = SMALL_IO.replace("dims: [ 8, 64 ] },\n", "dims: [ 8, 128 ] },\n", 1)
    harness.make_model(repo, "refused_often", pte="triton_small", config=f'backend: "torchtrt_executorch"\n{io}')
    config = os.path.join(repo, "refused_often", "config.pbtxt")

    line = "input 'input_0' has dims [8, 128] in the config"  # the backend's refusal, as the server logs it
    before = server.log().count(line)
    samples = []
    for k in range(250):
        with open(config, "a") as f:
            f.write(f"# load {k}\n")
        message = server.load("refused_often")
        assert message is not None and "has dims [8, 128] in the config" in message, message
        if k in (49, 249):
            samples.append(harness.rss_mib(server.process.pid))
    refusals = server.log().count(line) - before
    assert refusals == 250, (refusals, server.log()[-2000:])
    assert samples[1] - samples[0] <= 1.0, ("host RSS MiB after 50 and 250 refused loads", samples)


def test_a_static_tensor_takes_its_own_dims_only(server, repo):
    io = SMALL_IO.replace("dims: [ 8, 64 ] },\n", "dims: [ -1, 64 ] },\n", 1)
    harness.make_model(repo, "static_narrowed", pte="triton_small_static", config=f'backend: "torchtrt_executorch"\n{io}')
    message = refused(server, "static_narrowed")
    assert "input 'input_0' has dims [-1, 64] in the config; the program's are [8, 64] (a static tensor" in message, message


def test_inputs_with_another_type_are_refused(server, repo):
    io = SMALL_IO.replace("TYPE_FP32", "TYPE_INT32", 1)
    harness.make_model(repo, "bad_type", pte="triton_small", config=f'backend: "torchtrt_executorch"\n{io}')
    message = refused(server, "bad_type")
    assert "input 'input_0' is TYPE_INT32 in the config; the program takes TYPE_FP32" in message


def test_a_missing_input_is_refused(server, repo):
    io = SMALL_IO.replace(',\n        { name: "input_1" data_type: TYPE_FP32 dims: [ 8, 64 ] }', "")
    harness.make_model(repo, "one_input", pte="triton_small", config=f'backend: "torchtrt_executorch"\n{io}')
    assert "the config gives 1 inputs; the program's method has 2" in refused(server, "one_input")


def test_batching_needs_every_tensor_dynamic_in_dim_0_within_its_bound(server, repo):
    # Note [batching requests]: a static program cannot take another batch size, and a dynamic one
    # takes max_batch_size up to its bound in dim 0 (triton_small: [8, 64]).
    harness.make_model(repo, "batched_static", pte="triton_small_static",
                       config='backend: "torchtrt_executorch"\nmax_batch_size: 4\n')
    message = refused(server, "batched_static")
    assert ("max_batch_size is 4: the backend batches requests along dim 0 of every input and output, so each must "
            "be dynamic with a bound of at least 4 there; input 'input_0' is static [8, 64]") in message, message
    harness.make_model(repo, "batched_over", pte="triton_small",
                       config='backend: "torchtrt_executorch"\nmax_batch_size: 16\n')
    message = refused(server, "batched_over")
    assert "input 'input_0' is dynamic with dim 0 bounded by 8 (set max_batch_size 0" in message, message


def test_a_batching_configs_dims_leave_the_batch_dim_out(server, repo):
    # Completed: the program's dims past dim 0 (-1 where dynamic), and the log says the requests are
    # batched; given: dims past dim 0 within the bound are taken, the program's full rank is not.
    harness.make_model(repo, "batched_auto", pte="triton_small",
                       config='backend: "torchtrt_executorch"\nmax_batch_size: 8\n')
    message = server.load("batched_auto")
    if GPUS == 0:
        assert message is not None and "model 'batched_auto' needs a CUDA GPU" in message, message
    assert ("model 'batched_auto': inputs and outputs auto-completed from the program: inputs input_0 TYPE_FP32 [-1, -1] "
            "(dynamic, within [8, 64]), input_1 TYPE_FP32 [-1, -1] (dynamic, within [8, 64]); outputs output_0 TYPE_FP32 "
            "[-1, -1] (dynamic, within [8, 64]); max_batch_size 8: requests batched along dim 0 (the config's dims "
            "leave it out)") in server.log(), server.log()[-3000:]
    if GPUS:
        assert [[int(d) for d in i["dims"]] for i in server.client.get_model_config("batched_auto")["input"]] == [[-1], [-1]]
        server.unload("batched_auto")
    io = SMALL_IO.replace("dims: [ 8, 64 ]", "dims: [ 64 ]")
    harness.make_model(repo, "batched_given", pte="triton_small",
                       config=f'backend: "torchtrt_executorch"\nmax_batch_size: 8\n{io}')
    message = server.load("batched_given")
    if GPUS == 0:
        assert message is not None and "model 'batched_given' needs a CUDA GPU" in message, message
    else:
        assert message is None, message
        server.unload("batched_given")
    harness.make_model(repo, "batched_full_rank", pte="triton_small",
                       config=f'backend: "torchtrt_executorch"\nmax_batch_size: 8\n{SMALL_IO}')
    message = refused(server, "batched_full_rank")
    assert ("input 'input_0' has dims [8, 64] in the config; the program's tensor is dynamic with 1 dims bounded by [64] "
            "past dim 0 (max_batch_size > 0: the config leaves the batch dim out)") in message, message


def test_a_plan_for_more_gpus_than_the_machine_has_is_refused_naming_the_count(server, repo):
    # A several-GPU plan file for GPUs 0 and 1 (0 and GPUS on a bigger machine): refused before any
    # split, by the device count alone; without a GPU, this is the reason given (not the missing GPU).
    last = max(1, GPUS)
    gpu = harness.gpu_plan_fields() if GPUS > 0 else None
    harness.make_model(repo, "plans_more", pte="triton_small", parameters={"plan_file": "plans.json"})
    harness.write_plans(os.path.join(repo, "plans_more", "plans.json"),
                        {0: harness.plan_dict([("plans_more", 16)], gpu=gpu),
                         last: harness.plan_dict([("plans_more", 16)], gpu=gpu)})
    message = refused(server, "plans_more")
    assert "torchtrt_executorch: plan file" in message and "plans.json: partition plan: the plan is for GPUs 0, " \
        f"{last} ({last + 1} GPUs at least); this machine has {GPUS} GPU" in message, message
    if GPUS == 0:
        assert "Unsupported: torchtrt_executorch: plan file" in message, message


def test_a_malformed_several_gpu_plan_is_refused_naming_the_device(server, repo):
    harness.make_model(repo, "plans_bad", pte="triton_small", parameters={"plan_file": "plans.json"})
    harness.write_plans(os.path.join(repo, "plans_bad", "plans.json"),
                        {0: harness.plan_dict([("plans_bad", 16)]), 1: harness.plan_dict([("plans_bad", 12)])})
    message = refused(server, "plans_bad")
    assert "devices[1] (device 1).plan: partition 'plans_bad' has 12 SMs; sizes are multiples of 8" in message, message


def test_perf_analyzer_runs_against_the_server(server, repo):
    # perf_analyzer is the measure (perf_bench.py); here it runs once against the real server, so a
    # packaging break (the binary, its libraries) fails CI. Without a GPU no model can serve: the
    # server refuses the load with the backend's reason, and perf_analyzer reports the model unavailable.
    import perf_bench
    binary, env = perf_bench.perf_analyzer_command()
    assert os.access(binary, os.X_OK), binary
    pte = "triton_small" if GPUS == 0 else "triton_elementwise"
    harness.make_model(repo, "perf_probe", pte=pte,
                       extra="" if GPUS == 0 else 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    message = server.load("perf_probe")
    csv_path = os.path.join(repo, "perf_probe.csv")
    done = subprocess.run([binary, "-m", "perf_probe", "-u", f"127.0.0.1:{server.grpc_port}", "-i", "grpc",
                           "--concurrency-range", "1", "--request-count", "50", "-f", csv_path,
                           "--shape", "input_0:8,64", "--shape", "input_1:8,64"],
                          capture_output=True, text=True, env=env, timeout=120)
    output = done.stdout + done.stderr
    if GPUS == 0:
        assert message is not None and "model 'perf_probe' needs a CUDA GPU and this machine has none usable" in message
        assert done.returncode != 0, output
        assert "perf_probe" in output and re.search(r"unavailable|not ready|not found|unknown model", output, re.I), output
    else:
        assert message is None, message
        assert done.returncode == 0, output
        row = perf_bench.read_csv(csv_path)
        assert float(row["Inferences/Second"]) > 0 and float(row["Server Compute Infer"]) > 0, row
        server.unload("perf_probe")




def python_backend_server(tmp_path, monkeypatch, names):
    """harness.python_backend_models in a test: the real server with models of the perf bench's names
    and shapes on Triton's Python backend (no GPU needed); skips, saying why, where this server cannot
    run that backend. The caller loads the models and stops the server."""
    import perf_bench
    try:
        env = harness.python_backend_models(str(tmp_path), names, perf_bench.SHAPE)
    except harness.Unavailable as e:
        pytest.skip(str(e))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TRTET_TRITON_PRELOAD", raising=False)
    return harness.Server(str(tmp_path / "repo"))


def test_the_perf_benchs_reading_of_the_real_servers_traces(tmp_path, monkeypatch):
    # Triton's own request traces as the perf bench reads them (read_traces, server_times_us, arrivals_ns:
    # Note [where the queue goes], Note [late at the client or on the way]), from the real server on the
    # CPU: a model of the latency model's name on Triton's Python backend, one perf_analyzer window per
    # protocol. Every request of a window is found in its span, with the frontend's receipt under the
    # name the bench reads for that protocol, and the window's lateness at the server is read.
    import perf_bench
    try:
        env = harness.python_backend_models(str(tmp_path), ["latency"], perf_bench.SHAPE)
    except harness.Unavailable as e:
        pytest.skip(str(e))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TRTET_TRITON_PRELOAD", raising=False)
    trace_path = str(tmp_path / "trace.json")
    s = harness.Server(str(tmp_path / "repo"), args=perf_bench.trace_args(trace_path))
    work = tmp_path / "work"
    work.mkdir()
    windows = {}
    try:
        message = s.load("latency")
        assert message is None, message + s.log()[-3000:]
        perf_bench.enable_trace(s, "latency")
        for protocol in perf_bench.PROTOCOLS:
            for attempt in range(3):  # perf_analyzer's client stops at times with the server clean: again
                try:
                    windows[protocol] = perf_bench.measure(s, protocol, "host", 500, 1.0, str(work), f"{protocol}_{attempt}")
                    break
                except perf_bench.WindowStalled as e:
                    if not e.client_side:
                        raise
            assert protocol in windows, f"perf_analyzer stalled three times over {protocol}"
    finally:
        s.stop()  # the server writes the traces it still holds as it exits
    traces = perf_bench.read_traces(trace_path)
    receipt = {"grpc": "GRPC_WAITREAD_END", "http": "HTTP_RECV_START"}
    for protocol, w in windows.items():
        rows = perf_bench.server_times_us(traces, "latency", w["start_ns"], w["end_ns"])
        arrivals = perf_bench.arrivals_ns(traces, "latency", w["start_ns"], w["end_ns"])
        assert len(rows) == len(arrivals) == w["requests"] == perf_bench.TRACE_BATCH, (protocol, len(rows), len(arrivals))
        inside = [t for t in traces.values() if w["start_ns"] <= t.get("REQUEST_START", -1) <= w["end_ns"]]
        assert all(receipt[protocol] in t and t[receipt[protocol]] <= t["REQUEST_START"] for t in inside), protocol
        assert all(r[0] > 0 and r[2] > 0 for r in rows), protocol  # queue + compute, compute
        side = {}
        perf_bench.add_lateness(side, "received", arrivals, 500)
        assert 0.0 <= side["received_late_p99_us"] <= side["received_late_max_us"] < 1e6, side


def test_the_perf_benchs_latency_cores_are_the_latency_instances_own(tmp_path, monkeypatch):
    # Note [cores of the latency model's own], in the real server: a model of the latency model's name on
    # Triton's Python backend, its instance_group as the bench writes it (on the CPU here, where no GPU
    # group can load), the server started on the cores left and with the bench's host policy. A thread
    # of the server runs on the latency core alone, and the server's main thread never there.
    import perf_bench
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip(f"needs two cores to give one its own (this process may use {len(cores)})")
    left, own, policy = perf_bench.latency_cores_split(set(cores), 1)
    assert own == {cores[-1]} and left == set(cores[:-1]), (own, left)
    assert policy == f"--host-policy=latency,cpu-cores={cores[-1]}-{cores[-1]}", policy
    with pytest.raises(ValueError, match="not consecutive"):
        perf_bench.latency_cores_split({0, 1, 2, 5}, 2)
    with pytest.raises(ValueError, match="it takes 1 to"):
        perf_bench.latency_cores_split(set(cores), len(cores))
    s = python_backend_server(tmp_path, monkeypatch, ["latency"])
    s.stop()  # the models are written; the server starts again below, as the bench starts it
    config = tmp_path / "repo" / "latency" / "config.pbtxt"
    group = perf_bench.instance_group_text(1, "latency", host_policy=perf_bench.LATENCY_POLICY)
    assert 'host_policy: "latency"' in group, group
    config.write_text(re.sub(r"instance_group \[.*\]\n", group.replace("KIND_GPU", "KIND_CPU").replace(" gpus: [ 0 ]", ""),
                             config.read_text()))
    monkeypatch.setattr(harness, "SERVER_CPUS", left)
    s = harness.Server(str(tmp_path / "repo"), args=[policy])
    try:
        message = s.load("latency")
        assert message is None, message + s.log()[-3000:]
        pid = s.process.pid
        threads = list(thread_cores(pid).values())  # each thread's cores
        assert os.sched_getaffinity(pid) == left, (os.sched_getaffinity(pid), left)
        assert own in threads, threads
    finally:
        s.stop()


def test_the_batch_benchs_runs_read_perf_analyzer_and_the_servers_counts(tmp_path, monkeypatch):
    # batch_bench.run against the real server and the real perf_analyzer, with models of the bench's
    # names on Triton's Python backend (no GPU): "single" takes [1, 64] one request a call, "batched"
    # rows of 64 with max_batch_size 8 and the dynamic batcher, as the bench configures its own. Each
    # run's CSV is read and Triton's counters over it give a request count, no failure, and one
    # execution per request for "single", at most one for "batched".
    import batch_bench
    try:
        env = harness.python_backend_models(str(tmp_path), list(batch_bench.MODELS), (1, batch_bench.COLS))
    except harness.Unavailable as e:
        pytest.skip(str(e))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TRTET_TRITON_PRELOAD", raising=False)
    # Dims -1 as the backend completes them for triton_elementwise, so perf_analyzer's --shape decides
    # the requests' shapes (it ignores --shape for fixed dims).
    for name, head, dims in (("single", "max_batch_size: 0\n", "-1, -1"),
                             ("batched", "max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 2000 }\n",
                              "-1")):
        with open(tmp_path / "repo" / name / "config.pbtxt", "w") as f:
            f.write('backend: "python"\n' + head +
                    f'input [ {{ name: "input_0" data_type: TYPE_FP32 dims: [ {dims} ] }}, '
                    f'{{ name: "input_1" data_type: TYPE_FP32 dims: [ {dims} ] }} ]\n'
                    f'output [ {{ name: "output_0" data_type: TYPE_FP32 dims: [ {dims} ] }} ]\n'
                    'instance_group [ { kind: KIND_CPU count: 1 } ]\n')
    s = harness.Server(str(tmp_path / "repo"))
    try:
        for name in batch_bench.MODELS:
            message = s.load(name)
            assert message is None, message + s.log()[-3000:]
        work = tmp_path / "work"
        work.mkdir()
        for model in batch_bench.MODELS:
            row = batch_bench.run(s, model, 4, 1.0, str(work))
            assert row["inferences_per_s"] > 0 and row["p99_us"] >= row["p50_us"] > 0, row
            assert row["failed"] == 0 and row["requests"] > 0, row
            if model == "single":
                assert row["executions_per_request"] == 1.0, row
            else:
                assert 0 < row["executions_per_request"] <= 1.0, row
    finally:
        s.stop()


def test_the_perf_benchs_client_p999_comes_from_perf_analyzers_export(tmp_path, monkeypatch):
    # Note [the client's p99.9] in perf_bench.py, against the real server and the real perf_analyzer:
    # a model named as the bench's latency model, served by Triton's Python backend on the CPU (no GPU
    # needed), one window per protocol. The export's own p99 must be the CSV's (the same requests,
    # the same clock), its p99.9 above it, every request answered, and the file gone once read.
    import perf_bench
    s = python_backend_server(tmp_path, monkeypatch, ["latency"])
    try:
        message = s.load("latency")
        assert message is None, message + s.log()[-3000:]
        work = tmp_path / "work"
        work.mkdir()
        stalls = []

        def window(protocol, tag, export):
            # perf_analyzer's asynchronous client stops at times with the server clean (SERVING.md, "A load
            # generator that stops"; it did here once in CI, 375 of 500 sent), and once in CI wrote an export
            # of 7 of its 500 requests (Note [an export short of its window]): such a window runs again.
            for attempt in range(3):
                try:
                    return perf_bench.measure(s, protocol, "host", 500, 1.0, str(work), f"{tag}_{attempt}", export=export)
                except perf_bench.WindowStalled as e:
                    if not e.client_side:
                        raise
                    stalls.append(str(e)[:200])
            pytest.fail(f"perf_analyzer stalled three times: {stalls}")

        for protocol in perf_bench.PROTOCOLS:
            w = window(protocol, f"probe_{protocol}", export=True)
            assert "export_error" not in w, w
            assert w["exported"] == w["requests"] == perf_bench.TRACE_BATCH and w["unanswered"] == 0, \
                (w["exported"], w["requests"], w["unanswered"], stalls)
            assert abs(w["export_p99_us"] - w["p99_us"]) <= 1.0, w  # the CSV's, to the us (perf_bench.nearest_rank)
            assert w["p999_us"] > w["export_p99_us"] > 0, w
            # each answered request's latency kept for the row's pooled p99 (Note [one p99 per side])
            assert len(w[perf_bench.CLIENT_TIMES]) == w["exported"], w["exported"]
            assert perf_bench.nearest_rank(w[perf_bench.CLIENT_TIMES], 99) == w["export_p99_us"]
            # Note [calls per second]: the answers over the span they came in, near the rate sent (500 requests
            # at 500/s; perf_analyzer's schedule runs a little early at times: 501.7 once here)
            assert 250.0 < w["served_per_s"] < 1.05 * 500.0, w["served_per_s"]
            # Note [late at the client or on the way]: the sends read from the same export
            assert 0.0 <= w["sent_late_p99_us"] <= w["sent_late_max_us"] < 1e6, w
            # the export read and deleted (a stalled attempt's too), the CSVs kept
            assert os.listdir(work) and all(f.endswith(".csv") for f in os.listdir(work)), os.listdir(work)
        plain = window("grpc", "plain", export=False)
        assert "p999_us" not in plain and "export_error" not in plain  # asked for only by the measured windows
        assert perf_bench.CLIENT_TIMES not in plain
    finally:
        s.stop()


SIGTERM_BENCH = """
import subprocess, sys, time
sys.path.insert(0, {tests!r})
import harness
if sys.argv[1] == "stop": harness.stop_on_sigterm()
# What a bench starts: a load generator in a session of its own, as perf_bench's aggressor is.
child = subprocess.Popen(["sleep", "600"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    try:
        print(child.pid, flush=True)
        time.sleep(600)
    except Exception:  # a bench's own handlers for a failed window: not where SIGTERM ends up
        print("caught", flush=True)
finally:
    child.kill()
    child.wait()
    open(sys.argv[2], "w").write("cleaned up")
"""


@pytest.mark.parametrize("mode", ["stop", "default"])
def test_a_bench_stopped_by_sigterm_stops_what_it_started(tmp_path, mode):
    # Note [a bench stopped by its timeout] (harness.py): with stop_on_sigterm, SIGTERM (gpu-triton's
    # `timeout`) runs the bench's finally clauses, past its `except Exception`, and the load generator it
    # started is gone; without it (Python's default, the "default" case) the process dies and its child
    # keeps running, which is what left S50's aggressor beside every later run.
    script = tmp_path / "bench.py"
    script.write_text(SIGTERM_BENCH.format(tests=os.path.dirname(os.path.abspath(__file__))))
    marker = tmp_path / "cleaned"
    bench = subprocess.Popen([sys.executable, str(script), mode, str(marker)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    child = int(bench.stdout.readline())
    try:
        bench.send_signal(signal.SIGTERM)
        out, err = bench.communicate(timeout=30)
        child_alive = os.path.exists(f"/proc/{child}") and "Z" not in open(f"/proc/{child}/stat").read().split()[2]
        if mode == "stop":
            assert marker.read_text() == "cleaned up", err
            assert not child_alive
            assert "caught" not in out and "Terminated: stopped by signal 15 (SIGTERM)" in err, (out, err)
            assert bench.returncode == 1, err  # an uncaught exception's status: not 0
        else:  # the bug the helper prevents, shown on Python's default action
            assert bench.returncode == -signal.SIGTERM and not marker.exists() and child_alive
    finally:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_every_bench_stops_what_it_started_on_sigterm():
    # Each bench that scripts/gpu-triton runs under `timeout` installs the handler first thing in its main
    # (the mechanism itself: the test above).
    import ast
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("perf_bench", "soak_bench", "fault_bench", "shift_bench", "serving_bench", "stall_check", "batch_bench"):
        tree = ast.parse(open(os.path.join(here, name + ".py")).read())
        main = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "main")
        calls = [n for n in ast.walk(main) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "stop_on_sigterm"]
        assert calls, f"{name}.main() does not call harness.stop_on_sigterm()"


def test_the_perf_bench_stopped_by_sigterm_summarizes_what_it_measured(tmp_path, monkeypatch, capsys):
    # A layout that SIGTERM stopped (run_layout records it and stops its servers): perf_bench runs no
    # layout after it, still writes its JSON and prints its summary, and fails.
    import perf_bench
    ran = []

    def run_layout(layout, args, plan_gpu, work):
        ran.append(layout)
        return {"layout": layout, "error": "stopped by signal 15 (SIGTERM)", "terminated": True, "windows": []}

    monkeypatch.setattr(perf_bench, "run_layout", run_layout)
    monkeypatch.setattr(harness, "gpu_plan_fields", lambda device=0: {"name": "a GPU", "sm_count": 132})
    out = tmp_path / "perf.json"
    monkeypatch.setattr(sys, "argv", ["perf_bench.py", "--layouts", "partitioned,whole,mps", "--json", str(out),
                                      "--work", str(tmp_path)])
    before = signal.getsignal(signal.SIGTERM)
    try:
        assert perf_bench.main() == 1
        assert signal.getsignal(signal.SIGTERM) is not before  # main installed the bench's handler
    finally:
        signal.signal(signal.SIGTERM, before)
    assert ran == ["partitioned"]
    printed = capsys.readouterr().out
    assert "stopped by SIGTERM in the partitioned layout" in printed and "== perf bench summary ==" in printed
    assert "perf bench: FAILED: partitioned: stopped by signal 15 (SIGTERM)" in printed, printed
    assert json.loads(out.read_text())[0]["terminated"] is True


def test_the_perf_benchs_aggressor_stops_at_once(tmp_path, monkeypatch):
    # Note [stopping the aggressor] in perf_bench.py, with the real perf_analyzer against a model of the
    # aggressor's name on Triton's Python backend: the load gets going, and stop() ends it within its
    # grace and a little more (it had waited 10 s for a perf_analyzer that does not exit on SIGINT),
    # with no request in flight left on the server.
    import perf_bench
    s = python_backend_server(tmp_path, monkeypatch, ["aggressor"])
    try:
        message = s.load("aggressor")
        assert message is None, message + s.log()[-3000:]
        load = perf_bench.AggressorLoad(s, str(tmp_path))  # raises unless calls complete
        t0 = time.monotonic()
        load.stop()
        took = time.monotonic() - t0
        assert load.process.poll() is not None
        assert took < perf_bench.AggressorLoad.STOP_GRACE_S + 4.0, (took, open(load.log_path).read()[-2000:])
        served = perf_bench.success_count(s, "aggressor")
        time.sleep(0.5)
        assert perf_bench.success_count(s, "aggressor") == served  # nothing more arrives once stopped
        assert s.client.is_server_ready()
    finally:
        s.stop()


def perf_run_json(path, client, server, control=None, layouts=("partitioned",)):
    """A perf bench result of one pair per row: alone p99s of 1000 us (client) and 400 us (server),
    beside them times client[i] and server[i] for the rows in perf_bench's order."""
    import perf_bench
    results = []
    for layout in layouts:
        windows = []
        for i, (protocol, io) in enumerate((p, io) for p in perf_bench.PROTOCOLS for io in perf_bench.IOS):
            side = {"p50_us": 300.0, "p99_us": 1000.0, "p999_us": 2000.0, "server_p99_us": 400.0, "server_us": 150.0,
                    "throughput": 2000.0, "compute_us": 90.0, "delayed": []}
            w = {"protocol": protocol, "io": io, "rep": 0, "aggressor_calls_per_s": 850.0, "alone": dict(side),
                 "beside": dict(side, p99_us=1000.0 * client[i], server_p99_us=400.0 * server[i])}
            if control is not None:
                w["control"] = dict(side, p99_us=1000.0 * control[i])
            windows.append(w)
        results.append({"layout": layout, "windows": windows,
                        "device_memory_mib": {"gpu_used_before": 500, "gpu_used_loaded": 1665, "servers": {"7": 1165}}})
    path.write_text(json.dumps(results))
    return str(path)


def test_perf_runs_counts_each_runs_reading_against_the_goals(tmp_path, capsys):
    # perf_runs.py: the goal "in every run" over the runs' JSON; a run missing a row counts as a reading
    # not kept; ratios exactly at the goal keep it.
    import perf_bench
    import perf_runs
    a = perf_run_json(tmp_path / "a.json", [1.00, 1.10, 0.90, 0.95], [1.00, 1.05, 0.90, 0.95], control=[1.0, 1.2, 0.9, 1.0])
    b = perf_run_json(tmp_path / "b.json", [1.00, 1.11, 0.90, 0.95], [1.06, 1.00, 0.90, 0.95])
    assert perf_runs.main([a, a]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == ("perf runs: 2 runs; partitioned: client <= 1.10 in 8 of 8 readings, "
                                            "server <= 1.05 in 8 of 8 readings; in every run: met"), out
    assert "1.10* (1.05*) [1.20]" in out  # the control's ratio beside the pair's; no per-request times: *
    assert "  2000/2000  850  90" in out  # no export: perf_analyzer's calls/s (Note [calls per second])
    assert "  run 2 partitioned 1665 (500); per server: 1165" in out, out
    assert "fell behind:" not in out
    assert "the host before each layout" not in out  # runs without looks at the host say nothing of it
    assert "cores kept awake" not in out  # nor do runs from before S59 of their host settings
    # Note [the cores kept awake]: each run's host settings, from its first layout; a run without them
    # says so.
    results = json.loads(open(a).read())
    results[0]["host_settings"] = "host idle states left as they are; cores kept awake: the servers' 0,1 (keep-cores-awake)"
    (tmp_path / "awake.json").write_text(json.dumps(results))
    assert perf_runs.main([str(tmp_path / "awake.json"), a]) == 0
    out = capsys.readouterr().out
    assert ("  run 1: host idle states left as they are; cores kept awake: the servers' 0,1 (keep-cores-awake)\n"
            "  run 2: (not recorded)\n") in out, out
    # Note [a window the load generator fell behind in]: a row's windows kept though delayed, and run again.
    results = json.loads(open(a).read())
    results[0]["windows"][1]["alone"]["delayed"] = ["not able to keep up"]
    results[0]["windows"][1]["beside"]["ran_again"] = ["not able to keep up"]
    (tmp_path / "late.json").write_text(json.dumps(results))
    assert perf_runs.main([str(tmp_path / "late.json")]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  run 1 partitioned ") and "spread" in line]
    assert [("fell behind: 1 window(s) kept, 1 run again" in line) for line in rows] == [False, True, False, False], rows
    assert not any("stolen from" in line for line in rows), rows
    # Note [a window the hypervisor took from]: a row's windows run again for their steal.
    results[0]["windows"][2]["alone"]["ran_again_stolen"] = {"steal_percent": 0.3, "steal_core_percent": 3.0, "steal_core": 1}
    (tmp_path / "stolen.json").write_text(json.dumps(results))
    assert perf_runs.main([str(tmp_path / "stolen.json")]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  run 1 partitioned ") and "spread" in line]
    assert [line.endswith("stolen from: 1 window(s) run again") for line in rows] == [False, False, True, False], rows
    del results[0]["windows"][2]["alone"]["ran_again_stolen"]
    # Note [the host while it measures]: the looks at the host, each with its layout and window.
    look = {"seconds": 1.0, "load_average": ["3.10", "2.00", "1.00"], "cores_busy_percent": {"14": 97.0},
            "busiest": [{"command": "tritonserver", "pid": 42, "percent": 180.0}]}
    results[0]["host_before"] = look
    results[0]["host_after_delayed"] = [dict(look, window="partitioned_grpc_cuda_0_alone")]
    (tmp_path / "looked.json").write_text(json.dumps(results))
    assert perf_runs.main([str(tmp_path / "looked.json")]) == 0
    out = capsys.readouterr().out
    assert ("  run 1 partitioned before: over 1 s: busiest tritonserver 180% (pid 42); load generators' cores busy "
            "14: 97%; load average 3.10 2.00 1.00") in out, out
    assert "  run 1 partitioned after partitioned_grpc_cuda_0_alone: over 1 s: busiest tritonserver 180%" in out, out
    assert "how late the latency model's requests came" not in out  # runs before S57's lateness say nothing of it
    # Note [late at the client or on the way], Note [time the hypervisor took]: per run and row, the
    # lateness when sent and when received, and the steal, alone -> beside.
    for w in results[0]["windows"]:
        w["alone"].update(sent_late_p99_us=40.0, received_late_p99_us=55.0, steal_percent=0.5, steal_core_percent=2.0)
        w["beside"].update(sent_late_p99_us=4000.0, received_late_p99_us=4100.0, steal_percent=3.25,
                           steal_core_percent=41.0)
    (tmp_path / "timed.json").write_text(json.dumps(results))
    assert perf_runs.main([str(tmp_path / "timed.json")]) == 0
    out = capsys.readouterr().out
    assert ("  run 1 partitioned grpc host sent 40->4000 | received 55->4100 | steal 0.50->3.25 2.00->41.00"
            in out), out
    # Note [a window the hypervisor took from]: per run, the windows kept at or above the limit, and the
    # steal of those perf_analyzer fell behind in.
    sides_kept = sum(len(perf_bench.sides(w)) for w in results[0]["windows"])  # the controls', without steal, too
    stolen = 2 * len(results[0]["windows"])
    assert stolen < sides_kept
    assert f"  run 1: {stolen} of {sides_kept} at or above 0.2 % steal; fell behind in 1, steal 0.5 to 0.5\n" in out, out
    results[0]["windows"][0]["alone"]["steal_percent"] = 0.19
    results[0]["windows"][3]["beside"]["steal_percent"] = 0.2  # at the limit: counted
    results[0]["windows"][1]["alone"]["steal_percent"] = 5.0  # fell behind, as does the later one with 3.25
    results[0]["windows"][2]["beside"]["delayed"] = ["not able to keep up"]
    (tmp_path / "timed.json").write_text(json.dumps(results))
    assert perf_runs.main([str(tmp_path / "timed.json")]) == 0
    out = capsys.readouterr().out
    assert f"  run 1: {stolen - 1} of {sides_kept} at or above 0.2 % steal; fell behind in 2, steal 3.25 to 5\n" in out, out
    # Note [the per-request goals]: compute in+infer+out alone against 60 (host) and 45 (CUDA shm) us, as
    # Triton reports it and less the send phase; a run without phases has no reading less the send.
    assert "per request (partitioned, alone): compute in+infer+out <= the goal in 0 of 4 readings, less the send in 0 of 4" in out, out
    for w, compute, send in zip(results[0]["windows"], (61.0, 45.0, 80.0, 40.0), (1.0, 0.5, 20.0, 2.0)):
        w["alone"]["compute_us"] = compute
        w["alone"]["phases_us"] = {"send": send, "execute": 6.0}
    (tmp_path / "phased.json").write_text(json.dumps(results))
    assert perf_runs.main([str(tmp_path / "phased.json"), a]) == 0
    out = capsys.readouterr().out
    assert "  run 1 partitioned grpc host 61  less the send 60  goal 60\n" in out, out
    assert "  run 1 partitioned http cuda 40  less the send 38  goal 45\n" in out, out
    assert "  run 2 partitioned grpc cuda 90  less the send nan  goal 45\n" in out, out
    # at the goal keeps it (45 with CUDA shm, 60 less the send with host I/O); run 2 keeps neither
    assert ("per request (partitioned, alone): compute in+infer+out <= the goal in 2 of 8 readings, "
            "less the send in 4 of 8\nperf runs: ") in out, out
    assert perf_runs.main([a, b]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith("client <= 1.10 in 7 of 8 readings, server <= 1.05 in 7 of 8 readings; in every run: not met"), last
    gone = tmp_path / "c.json"
    gone.write_text(json.dumps([{"layout": "partitioned", "error": "stopped by signal 15 (SIGTERM)"}]))
    assert perf_runs.main([a, str(gone)]) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert "client <= 1.10 in 4 of 8" in last and last.endswith("not met"), last
    assert "run 2 partitioned (not measured: stopped by signal 15 (SIGTERM))" in out, out
    (tmp_path / "bad.json").write_text("{}")
    assert perf_runs.main([a, str(tmp_path / "bad.json")]) == 1
    assert "not a perf bench result" in capsys.readouterr().out


def test_perf_runs_reads_a_layout_over_the_runs_that_asked_for_it(tmp_path, capsys):
    # A session short of device time runs the partitioned layout's runs first and the others in a run
    # of their own (docs/SERVING.md, "How the next runs are read", S60): that run did not ask for the
    # partitioned layout, so it is not one of its runs; a layout a run asked for and did not measure, or
    # a run stopped by a signal, still counts as a reading not kept.
    import perf_runs
    part = perf_run_json(tmp_path / "part.json", [1.00] * 4, [1.00] * 4)
    others = perf_run_json(tmp_path / "others.json", [1.20] * 4, [1.20] * 4, layouts=("mps", "whole"))
    assert perf_runs.main([part, part, others]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == ("perf runs: 3 runs; partitioned: client <= 1.10 in 8 of 8 readings, "
                                            "server <= 1.05 in 8 of 8 readings (the 2 runs that asked for it); "
                                            "in every run: met"), out
    rows = {line.split()[0] + " " + line.split()[1] + " " + line.split()[2]: line for line in out.splitlines()
            if line.startswith(("partitioned ", "mps ", "whole "))}
    assert rows["partitioned grpc host"].count("(not asked)") == 1, rows  # run 3's cell
    assert rows["partitioned grpc host"].rstrip().endswith("2 of 2          2 of 2"), rows
    assert rows["mps http cuda"].count("(not asked)") == 2 and rows["mps http cuda"].rstrip().endswith(
        "0 of 1          0 of 1"), rows
    assert "(not run)" not in out
    # Asked for and not measured: the run's layouts name it, with an error.
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps([{"layout": "partitioned", "error": "the server did not start"}]))
    assert perf_runs.main([part, str(failed)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "client <= 1.10 in 4 of 8 readings" in last and "asked for it" not in last and last.endswith("not met"), last
    # Stopped by a signal in another layout: it may not have reached the partitioned one, so it asked.
    stopped = tmp_path / "stopped.json"
    stopped.write_text(json.dumps([{"layout": "mps", "error": "stopped by signal 15 (SIGTERM)", "terminated": True}]))
    assert perf_runs.main([part, str(stopped)]) == 0
    out = capsys.readouterr().out
    assert "(not run)" in out and out.strip().splitlines()[-1].endswith(
        "client <= 1.10 in 4 of 8 readings, server <= 1.05 in 4 of 8 readings; in every run: not met"), out
    # No run asked for it: nothing is met.
    assert perf_runs.main([others]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == ("perf runs: 1 run; partitioned: client <= 1.10 in 0 of 0 readings, server <= 1.05 in 0 of 0 "
                    "readings (the 0 runs that asked for it); in every run: not met"), last


def test_perf_runs_reads_each_run_by_its_pooled_p99s_where_it_has_them(tmp_path, capsys):
    # Note [one p99 per side]: a run's pooled p99s decide its reading, not its pairs' median. Here the
    # pairs say 1.20 (client) and 1.10 (server) in every row, the pooled p99s 1.00 and 1.00; in a
    # second run the other way round.
    import perf_bench
    import perf_runs

    def run(name, pairs, pooled_ratio):
        path = perf_run_json(tmp_path / name, [pairs[0]] * 4, [pairs[1]] * 4)
        results = json.loads(open(path).read())
        results[0]["pooled"] = {
            f"{p}_{io}": {side: {"alone_p99_us": 100.0, "beside_p99_us": 100.0 * pooled_ratio, "ratio": pooled_ratio,
                                 "alone_n": 8000, "beside_n": 8000} for side in ("client", "server")}
            for p in perf_bench.PROTOCOLS for io in perf_bench.IOS}
        open(path, "w").write(json.dumps(results))
        return path

    good = run("good.json", (1.20, 1.10), 1.00)
    bad = run("bad.json", (1.00, 1.00), 1.06)
    assert perf_runs.main([good, good, good]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].endswith("client <= 1.10 in 12 of 12 readings, server <= 1.05 in 12 of 12 "
                                                 "readings; in every run: met"), out
    assert "1.00 (1.00)" in out and "*" not in out.split("\n", 2)[2]
    assert "client pooled p99 100->100  server pooled p99 100->100" in out, out
    assert perf_runs.main([good, bad]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith("client <= 1.10 in 8 of 8 readings, server <= 1.05 in 4 of 8 readings; in every run: not met"), last


def test_perf_runs_says_what_moved_in_the_latency_models_own_time_beside_the_aggressor(tmp_path, capsys):
    # Note [what moved beside the aggressor]: per run and row, the backend's execute, the stream's wait,
    # the engine's GPU time and the send, means over the pairs alone -> beside, with compute's and the
    # queue's p99; per layout, the range of what beside added to execute and to the engine's GPU time.
    import perf_runs
    path = perf_run_json(tmp_path / "a.json", [1.0] * 4, [1.0] * 4, layouts=("partitioned", "mps"))
    assert perf_runs.main([path]) == 0
    assert "what moved" not in capsys.readouterr().out  # runs without phases say nothing of it
    results = json.loads(open(path).read())
    for r in results:
        for i, w in enumerate(r["windows"]):
            grow = 1.0 + i if r["layout"] == "partitioned" else 0.5
            for side, extra in (("alone", 0.0), ("beside", grow)):
                w[side]["phases_us"] = {"execute": 6.0 + extra, "stream_wait": 30.0, "send": 7.0,
                                        "trtet_engine_gpu_duration_us": 31.0 - extra / 2}
                w[side].update(compute_p99_us=50.0 + 2 * extra, queue_p99_us=9.0)
    results[0]["windows"][3]["alone"].pop("phases_us")  # a window without phases: its row has the other side's
    path2 = tmp_path / "phases.json"
    path2.write_text(json.dumps(results))
    assert perf_runs.main([str(path2)]) == 0
    out = capsys.readouterr().out
    assert ("  run 1 partitioned grpc cuda execute 6.0->8.0 wait 30.0->30.0 engine GPU 31.0->30.0 send 7.0->7.0 "
            "compute p99 50->54 queue p99 9->9\n") in out, out
    moved = out.split("what moved")[1].split("\nper run:")[0]
    assert "  run 1 partitioned http cuda " not in moved  # no phases alone: left out
    assert ("  partitioned: execute beside - alone +1.0 to +3.0 us over 3 rows; engine GPU beside - alone -1.5 to "
            "-0.5 us over 3 rows\n") in out, out
    assert "  mps: execute beside - alone +0.5 to +0.5 us over 4 rows;" in out, out


def test_the_perf_bench_says_which_host_cores_share_a_physical_core(tmp_path):
    # Note [cores that share a physical core]: from each core's topology/thread_siblings_list; an
    # offline core (no topology) is left out; an unreadable list says why.
    import perf_bench
    assert perf_bench.cpu_list("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    with pytest.raises(ValueError, match="runs backwards"):
        perf_bench.cpu_list("3-1")

    def host(siblings):
        base = tmp_path / f"cpu-{len(list(tmp_path.iterdir()))}"
        for core, text in siblings.items():
            (base / f"cpu{core}" / "topology").mkdir(parents=True)
            if text is not None:
                (base / f"cpu{core}" / "topology" / "thread_siblings_list").write_text(text + "\n")
        (base / "cpufreq").mkdir(parents=True)  # not a core
        return str(base)

    assert perf_bench.host_core_siblings(host({0: "0", 1: "1", 2: "2"})) == "3 physical cores, none shared (no SMT siblings)"
    assert perf_bench.host_core_siblings(host({0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3", 4: "4", 5: None})) == (
        "3 physical cores; siblings 0,2 1,3")
    assert perf_bench.host_core_siblings(host({0: "0-1", 1: "0-1"})) == "1 physical core; siblings 0,1"
    # With the latency model's cores: whether a sibling of one of them lies outside them.
    four = host({0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3", 4: "4"})
    assert perf_bench.host_core_siblings(four, own=[2, 3]) == (
        "3 physical cores; siblings 0,2 1,3; the latency model's cores 2,3 share physical cores with 0,1")
    assert perf_bench.host_core_siblings(four, own=[3, 4]).endswith("cores 3,4 share physical cores with 1")
    assert perf_bench.host_core_siblings(four, own=[4]).endswith("the latency model's cores 4 are whole physical cores")
    assert perf_bench.host_core_siblings(host({0: "0-1", 1: "0-1"}), own=[0, 1]).endswith("are whole physical cores")
    assert perf_bench.host_core_siblings(host({0: "x"})).startswith("not readable (")
    assert perf_bench.host_core_siblings(str(tmp_path / "none")).startswith("not readable (")


def test_the_perf_benchs_steal_is_the_time_the_hypervisor_took_from_each_core(tmp_path):
    # perf_bench's Note [time the hypervisor took]: the eighth figure of each core's line in
    # /proc/stat, over a window, as a share of all cores' time and of the core it took most from.
    import perf_bench
    stat = tmp_path / "stat"

    def write(lines):
        stat.write_text("cpu  1 2 3 4 5 6 7 8 0 0\n" + "".join(f"cpu{c} {' '.join(map(str, t))} 0 0\n"
                                                           for c, t in enumerate(lines)) + "intr 12 3\nctxt 99\n")
        return perf_bench.core_times(str(stat))

    # user nice system idle iowait irq softirq steal
    before = write([[100, 0, 50, 800, 10, 0, 0, 40], [10, 0, 10, 980, 0, 0, 0, 0]])
    assert before == {0: (190, 1000, 40), 1: (20, 1000, 0)}  # busy counts the steal, not idle or iowait
    after = write([[150, 0, 60, 840, 10, 0, 0, 140], [20, 0, 20, 1960, 0, 0, 0, 0]])
    # core 0: 100 of its 200 ticks stolen; core 1: none of 1000; all: 100 of 1200
    assert perf_bench.steal_percent(before, after) == (8.33, 50.0, 0)
    assert perf_bench.steal_percent(before, after, cores=[1]) == (0.0, 0.0, 1)
    assert perf_bench.window_steal(before, after) == {"steal_percent": 8.33, "steal_core_percent": 50.0, "steal_core": 0}
    assert perf_bench.window_steal(before, before) == {}  # no time passed: nothing to say
    # The core it took most from, wherever it is: here the second, a quarter of its 400 ticks.
    before = write([[0, 0, 0, 1000, 0, 0, 0, 10], [0, 0, 0, 1000, 0, 0, 0, 0]])
    after = write([[0, 0, 0, 1390, 0, 0, 0, 20], [0, 0, 0, 1300, 0, 0, 0, 100]])
    assert perf_bench.steal_percent(before, after) == (13.75, 25.0, 1)
    # A kernel whose lines stop before the steal figure reads none.
    stat.write_text("cpu0 1 2 3 4\n")
    assert perf_bench.core_times(str(stat)) == {0: (6, 10, 0)}
    # The real one, as measure() reads it: every core this process may run on, the steal no more than the time.
    real = perf_bench.core_times()
    assert set(os.sched_getaffinity(0)) <= set(real) and all(0 <= st <= total for _, total, st in real.values())


def test_the_perf_benchs_lateness_says_when_requests_left_the_schedule_of_the_rate():
    # perf_bench's Note [late at the client or on the way]: how late each request of a window came
    # against an even schedule of the rate, wherever the window started, in send order or not.
    import perf_bench
    step = 500_000  # 2,000/s
    even = [10_123 + i * step for i in range(1000)]
    assert perf_bench.lateness_us(even, 2000) == (0.0, 0.0)
    assert perf_bench.lateness_us(list(reversed(even)), 2000) == (0.0, 0.0)  # the order they were listed in
    # A burst: requests 500 to 519 owed while the sender was held, all sent at request 520's time.
    burst = [t if not 500 <= i < 520 else even[520] for i, t in enumerate(even)]
    p99, most = perf_bench.lateness_us(burst, 2000)
    assert most == 10_000.0  # request 500, twenty steps late
    assert p99 == perf_bench.nearest_rank([0.0] * 980 + [500.0 * k for k in range(1, 21)], 99) == 5_000.0
    # Sent 50 us early from request 100 on: it is the first hundred that read late, by 50 us.
    early = [t - (50_000 if i >= 100 else 0) for i, t in enumerate(even)]
    assert perf_bench.lateness_us(early, 2000) == (50.0, 50.0)
    assert perf_bench.lateness_us(even[:1], 2000) is None and perf_bench.lateness_us(even, 0) is None
    # When the server's frontend received each request: the gRPC read or HTTP receipt, else the request's
    # start, for the model's requests that started in the window.
    traces = {1: {"model": "latency", "REQUEST_START": 100, "GRPC_WAITREAD_END": 90},
              2: {"model": "latency", "REQUEST_START": 200, "HTTP_RECV_START": 180},
              3: {"model": "latency", "REQUEST_START": 300},
              4: {"model": "aggressor", "REQUEST_START": 150, "GRPC_WAITREAD_END": 140},
              5: {"model": "latency", "REQUEST_START": 900, "GRPC_WAITREAD_END": 890},
              6: {"model": "latency"}}
    assert sorted(perf_bench.arrivals_ns(traces, "latency", 100, 300)) == [90, 180, 300]
    window = {}
    perf_bench.add_lateness(window, "received", [0, 500_000, 1_500_000], 2000)
    assert window == {"received_late_p99_us": 500.0, "received_late_max_us": 500.0}
    perf_bench.add_lateness(window, "sent", [7], 2000)  # one request: nothing to say
    assert set(window) == {"received_late_p99_us", "received_late_max_us"}


def test_the_perf_benchs_export_reader_pairs_each_request_with_its_answer(tmp_path):
    # perf_bench.export_latencies_us on exports written here: a request with no answer is counted, not
    # paired with the next one's; a file that is empty, missing or holds no request is refused.
    import perf_bench
    path = tmp_path / "export.json"
    path.write_text('{"experiments":[{"requests":[{"timestamp":1000,"request_inputs":{"x":[0.0]},'
                    '"response_timestamps":[4000],"response_outputs":[]},{"timestamp":5000,"response_timestamps":[]},'
                    '{"timestamp":9000,"response_timestamps":[11000,12000]},{"timestamp":20000},'
                    '{"timestamp":30000,"response_timestamps":[31000]},{"timestamp":40000}],'
                    '"window_boundaries":[1,2]}],"version":"2.51.0"}')
    # (the span: the first answered request sent at 1000 ns, the last answer at 31000)
    assert perf_bench.export_latencies_us(str(path)) == ([3.0, 2.0, 1.0], 3, 30000)
    sends = []  # every request's send time, answered or not (Note [late at the client or on the way])
    assert perf_bench.export_latencies_us(str(path), sends) == ([3.0, 2.0, 1.0], 3, 30000)
    assert sends == [1000, 5000, 9000, 20000, 30000, 40000]
    # The client's percentiles by rank, as perf_analyzer's CSV takes them: 500 latencies whose tail jumps
    # after rank 495 give that rank's value as p99, not one interpolated toward the jump.
    tail = [float(v) for v in range(494)] + [1288.0] + [2749.0] * 5
    assert perf_bench.nearest_rank(tail, 99) == 1288.0 and perf_bench.nearest_rank(tail, 99.9) == 2749.0
    assert perf_bench.percentile(tail, 99) > 1300.0  # what the interpolation read in CI
    path.write_text("")
    with pytest.raises(ValueError, match="empty"):
        perf_bench.export_latencies_us(str(path))
    path.write_text('{"experiments":[]}')
    with pytest.raises(ValueError, match="holds no request"):
        perf_bench.export_latencies_us(str(path))
    with pytest.raises(ValueError, match="no profile export"):
        perf_bench.export_latencies_us(str(tmp_path / "missing.json"))


def test_the_soaks_request_mix_is_one_in_a_hundred_malformed_of_every_kind():
    # soak_bench.py's client: what it sends is what it says (no GPU needed to check the mix itself).
    import json as json_
    import soak_bench
    kinds = soak_bench.request_mix(1000, seed=3)
    assert len(kinds) == 1000
    malformed = [k for k in kinds if k != "good"]
    assert len(malformed) == 10 and set(malformed) == set(soak_bench.MALFORMED), malformed
    for block in range(10):  # one in each block of 100
        assert sum(k != "good" for k in kinds[block * 100:(block + 1) * 100]) == 1
    rng = np.random.default_rng(0)
    for kind in ("good",) + soak_bench.MALFORMED:
        shape, x, y, header, body = soak_bench.build_request(kind, rng)
        meta = json_.loads(header)
        declared = sum(i["parameters"]["binary_data_size"] for i in meta["inputs"])
        names = [i["name"] for i in meta["inputs"]]
        types = {i["datatype"] for i in meta["inputs"]}
        within = shape[0] <= 8 and shape[1] <= 64
        assert (len(body) == declared) == (kind != "truncated_body"), kind
        assert (names == ["input_0", "input_1"]) == (kind != "missing_input"), kind
        assert (types == {"FP32"}) == (kind != "wrong_dtype"), kind
        assert within == (kind != "over_bound"), (kind, shape)
        if kind == "good":
            assert np.array_equal(np.frombuffer(body[:x.nbytes], np.float32).reshape(shape), x)


def test_a_rows_reading_is_one_p99_per_side_over_every_request_of_its_windows():
    # perf_bench's Note [one p99 per side]: the requests of all alone windows against those of all
    # beside windows, not a pair's ratio; the client's by rank, the server's as its windows'; the
    # per-request lists stay out of the JSON, the pooled p99s go into it.
    import json as json_
    import perf_bench
    alone_1, beside_1 = [100.0] * 99 + [1000.0], [100.0] * 100  # a stall in one alone window
    alone_2, beside_2 = [100.0] * 100, [110.0] * 100
    ws = [{"protocol": "grpc", "io": "host", "rep": 0, "aggressor_calls_per_s": 850.0,
           "alone": {perf_bench.SERVER_TIMES: alone_1, perf_bench.CLIENT_TIMES: alone_1, "server_p99_us": 991.0, "p99_us": 991.0},
           "beside": {perf_bench.SERVER_TIMES: beside_1, perf_bench.CLIENT_TIMES: beside_1, "server_p99_us": 100.0, "p99_us": 100.0},
           "control": {"p99_us": 120.0, "server_p99_us": 100.0}},
          {"protocol": "grpc", "io": "host", "rep": 1, "aggressor_calls_per_s": 850.0,
           "alone": {perf_bench.SERVER_TIMES: alone_2, perf_bench.CLIENT_TIMES: alone_2, "server_p99_us": 100.0, "p99_us": 100.0},
           "beside": {perf_bench.SERVER_TIMES: beside_2, perf_bench.CLIENT_TIMES: beside_2, "server_p99_us": 110.0, "p99_us": 110.0}}]
    for w in ws:
        for side in perf_bench.sides(w):
            side["delayed"] = []
    server = perf_bench.pooled(ws, perf_bench.SERVER_TIMES, perf_bench.percentile)
    expected = perf_bench.percentile(beside_1 + beside_2, 99) / perf_bench.percentile(alone_1 + alone_2, 99)
    assert abs(server["ratio"] - expected) < 1e-12 and abs(server["ratio"] - 1.1) < 0.01, server
    assert (server["alone_n"], server["beside_n"]) == (200, 200)
    client = perf_bench.pooled(ws, perf_bench.CLIENT_TIMES, perf_bench.nearest_rank)
    assert (client["alone_p99_us"], client["beside_p99_us"]) == (100.0, 110.0), client  # rank 198 of 200
    assert [round(perf_bench.ratio(w, "server_p99_us"), 2) for w in ws] == [0.1, 1.1]  # the pairs' own
    # A window whose requests were not read leaves its side unpooled (no p99 over part of the windows).
    partial = [ws[0], dict(ws[1], beside={"p99_us": 110.0, "delayed": []})]
    assert perf_bench.pooled(partial, perf_bench.CLIENT_TIMES, perf_bench.nearest_rank) is None
    assert perf_bench.pooled([{"alone": {}, "beside": {}}], perf_bench.SERVER_TIMES, perf_bench.percentile) is None
    # summarize takes the row's readings from the layout's stored pooled p99s, else the pairs' median.
    layout = {"layout": "partitioned", "windows": ws, "pooled": perf_bench.pool_rows(ws)}
    stripped = perf_bench.without_server_times([layout])
    text = json_.dumps(stripped)
    assert perf_bench.SERVER_TIMES not in text and perf_bench.CLIENT_TIMES not in text
    assert stripped[0]["windows"][0]["alone"] == {"server_p99_us": 991.0, "p99_us": 991.0, "delayed": []}
    args = argparse.Namespace(bound=0.0)
    (row,), _ = perf_bench.summarize(json_.loads(text), args)
    assert row["client_pooled"]["ratio"] == 1.1 and abs(row["server_reading"] - 1.1) < 0.01, row
    assert abs(row["client_alone_spread"] - 9.91) < 1e-9 and abs(row["server_alone_spread"] - 9.91) < 1e-9
    assert perf_bench.reading_text(row) == "1.10 (1.10)"
    (row,), _ = perf_bench.summarize([{"layout": "partitioned", "windows": perf_bench.without_server_times(ws)}], args)
    assert row["client_pooled"] is None and row["client_reading"] == statistics.median([100.0 / 991.0, 1.1])
    assert perf_bench.reading_text(row) == "0.60* (0.60*)"


def test_a_perf_analyzer_window_that_stalls_is_stopped_and_says_which_side_held_the_requests(tmp_path, monkeypatch):
    # perf_bench.measure on a window that does not finish: perf_analyzer (here a stand-in that prints
    # and hangs) is stopped at its limit, and the error says how many of the window's requests (500,
    # perf_bench.TRACE_BATCH at least) the
    # server completed, so a stalled client is told from a server that stopped answering.
    import perf_bench
    hang = tmp_path / "perf_analyzer"
    hang.write_text("#!/bin/sh\necho 'Request Rate: 100 inference requests per seconds'\nexec sleep 60\n")
    hang.chmod(0o755)
    monkeypatch.setattr(perf_bench, "perf_analyzer_command", lambda extra_env=None: (str(hang), dict(os.environ)))
    monkeypatch.setattr(perf_bench, "STALL_SLACK_S", 0.0)

    class Client:
        def __init__(self, served):
            self.calls, self.served = 0, served

        def get_inference_statistics(self, model):
            self.calls += 1  # before the window: 500; after it: 500 + served
            done = 500 + (self.served if self.calls > 1 else 0)
            return {"model_stats": [{"inference_stats": {"success": {"count": done}, "fail": {"count": 0}}}]}

        def is_server_ready(self):
            return True

    class Server:
        grpc_port = http_port = 1

        def __init__(self, served, pending=3):
            self.client = Client(served)
            self.pending = pending

        def metrics_text(self):
            raise OSError("no /metrics here")

        def metric(self, *args, **kwargs):
            return self.pending

    started = time.monotonic()
    with pytest.raises(perf_bench.WindowStalled) as stalled:
        perf_bench.measure(Server(40), "grpc", "host", 100, 0.5, str(tmp_path), "stall")
    assert time.monotonic() - started < 20  # stopped at its limit (1 s), not left to hang
    said = str(stalled.value)
    assert "did not finish in 1 s" in said and "completed 40 of the 500 requests" in said, said
    assert "3 pending" in said and "the server is ready" in said and "Request Rate: 100" in said, said
    # Requests held by the server: not the load generator's stall.
    assert not stalled.value.client_side and stalled.value.start_ns < stalled.value.end_ns
    with pytest.raises(perf_bench.WindowStalled) as stalled:
        perf_bench.measure(Server(500), "grpc", "host", 100, 0.5, str(tmp_path), "stall")
    assert "perf_analyzer stalled after the server answered" in str(stalled.value), str(stalled.value)
    # The S45 stall: part of the window served, nothing failed, nothing pending, the server ready.
    with pytest.raises(perf_bench.WindowStalled) as stalled:
        perf_bench.measure(Server(375, pending=0), "grpc", "host", 100, 0.5, str(tmp_path), "stall")
    assert stalled.value.client_side and "0 pending" in str(stalled.value), str(stalled.value)


class WindowServer:
    """A stand-in server for perf_bench.measure's windows: its statistics, asked before each window and
    after it, count `served` successes and `failed` failures a window; its readiness and the pending
    requests /metrics would show are as given (no /metrics page otherwise)."""
    grpc_port = http_port = 1

    class Client:
        def __init__(self, served, failed, ready):
            self.calls, self.served, self.failed, self.ready = 0, served, failed, ready

        def get_inference_statistics(self, model):
            self.calls += 1  # before each window and after it; each window serves and fails as told
            windows = self.calls // 2
            return {"model_stats": [{"inference_stats": {
                "success": {"count": 500 + windows * self.served}, "fail": {"count": 2 + windows * self.failed}}}]}

        def is_server_ready(self):
            return self.ready

    def __init__(self, served, failed=0, ready=True, pending=0):
        self.client, self.pending = self.Client(served, failed, ready), pending

    def metrics_text(self):
        raise OSError("no /metrics here")

    def metric(self, *args, **kwargs):
        return self.pending


def test_a_window_perf_analyzer_failed_in_with_the_server_clean_runs_again(tmp_path, monkeypatch):
    # perf_bench's Note [a window perf_analyzer failed in]: S57's failure (a stand-in perf_analyzer
    # printing what the real one printed, exit status 99) is put down to the client, as a stall is, only
    # where the server served part of the window, failed none of it, holds none and is ready; then
    # measure_once_more runs the window again once. Otherwise it fails the layout as before.
    import perf_bench
    said = ("Request Rate: 2000 inference requests per seconds\nFailed to retrieve results from inference "
            "request.\nThread [0] had error: failed to parse the request JSON buffer: The document is empty. at 0\n")
    failing = tmp_path / "perf_analyzer"
    failing.write_text(f"#!/bin/sh\nprintf '{said}'\nexit 99\n")
    failing.chmod(0o755)
    monkeypatch.setattr(perf_bench, "perf_analyzer_command", lambda extra_env=None: (str(failing), dict(os.environ)))

    with pytest.raises(perf_bench.WindowStalled) as lost:
        perf_bench.measure(WindowServer(1234), "http", "cuda", 2000, 2, str(tmp_path), "w")
    text = str(lost.value)
    assert lost.value.client_side and lost.value.what == "failed", text
    assert "failed (99)" in text and "served 1234 of the window" in text and "The document is empty" in text, text
    # Refused, the message says which test kept the window from running again (S62's failure did not).
    for server, why in ((WindowServer(0), "served 0 of the window's requests and failed 0, holds 0 pending, is ready"),
                        (WindowServer(1234, failed=1), "served 1234 of the window's requests and failed 1,"),
                        (WindowServer(1234, ready=False), "holds 0 pending, is NOT ready"),
                        (WindowServer(1234, pending=2), "holds 2 pending, is ready")):
        with pytest.raises(RuntimeError) as refused:  # nothing sent, a request failed, not ready, held
            perf_bench.measure(server, "http", "cuda", 2000, 2, str(tmp_path), "w")
        assert not isinstance(refused.value, perf_bench.WindowStalled), str(refused.value)
        assert "failed (99)" in str(refused.value) and "The document is empty" in str(refused.value)
        assert why in str(refused.value), str(refused.value)
    # measure_once_more: the first failure is recorded and the window runs once more; a second fails.
    recorded = []
    with pytest.raises(perf_bench.WindowStalled) as twice:
        perf_bench.measure_once_more(lambda tag, e: recorded.append((tag, e.what)), WindowServer(1234), "http", "cuda",
                                     2000, 2, str(tmp_path), "w")
    assert recorded == [("w", "failed")] and "(w_again) failed (99)" in str(twice.value), str(twice.value)


def test_a_window_whose_profile_export_is_short_of_its_requests_runs_again_where_the_server_is_clean(
        tmp_path, monkeypatch):
    # perf_bench's Note [an export short of its window]: a stand-in perf_analyzer exits 0 with a CSV and
    # a profile export of `answered` requests of the window's 500 (and `unanswered` without an answer).
    # The whole export is read; a short one is not: the window is put down to the load generator only
    # where the server served all 500 and is clean, and measure_once_more runs it again once.
    import perf_bench
    stand_in = tmp_path / "perf_analyzer"
    stand_in.write_text(f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
csv_path = args[args.index("-f") + 1]
export = args[args.index("--profile-export-file") + 1] if "--profile-export-file" in args else os.devnull
answered, unanswered = (int(n) for n in open(os.path.join(os.path.dirname(csv_path), "shape")).read().split())
with open(csv_path, "w") as f:
    f.write("Inferences/Second,p50 latency,p99 latency\\n249.9,100,200\\n")
requests = [{{"timestamp": 1000 * i, "response_timestamps": [1000 * i + 100]}} for i in range(answered)]
requests += [{{"timestamp": 9000000 + i, "response_timestamps": []}} for i in range(unanswered)]
json.dump({{"experiments": [{{"requests": requests}}]}}, open(export, "w"), separators=(",", ":"))  # as rapidjson writes
""")
    stand_in.chmod(0o755)
    monkeypatch.setattr(perf_bench, "perf_analyzer_command", lambda extra_env=None: (str(stand_in), dict(os.environ)))

    def shape(answered, unanswered=0):
        (tmp_path / "shape").write_text(f"{answered} {unanswered}")

    shape(500)
    whole = perf_bench.measure(WindowServer(500), "grpc", "host", 500, 1.0, str(tmp_path), "w", export=True)
    assert "export_error" not in whole, whole["export_error"]
    assert whole["exported"] == 500 and whole["unanswered"] == 0 and whole["p999_us"] == 0.1, whole["exported"]
    assert not (tmp_path / "w.export.json").exists()  # read once and gone
    for answered, unanswered in ((7, 0), (499, 0), (499, 1), (500, 1)):
        shape(answered, unanswered)
        with pytest.raises(perf_bench.WindowStalled) as short:
            perf_bench.measure(WindowServer(500), "grpc", "host", 500, 1.0, str(tmp_path), "w", export=True)
        text = str(short.value)
        assert short.value.client_side and short.value.what == "exported short", text
        assert f"holds {answered} answered and {unanswered} unanswered of the window's 500 requests" in text, text
        assert "249.9 calls/s" in text and "served 500 of the window's requests and failed 0" in text, text
        assert not (tmp_path / "w.export.json").exists()
    # The server short of the window, or failing part of it: not the load generator's, the window fails.
    shape(7)
    for server in (WindowServer(493), WindowServer(500, failed=1)):
        with pytest.raises(perf_bench.WindowStalled) as short:
            perf_bench.measure(server, "grpc", "host", 500, 1.0, str(tmp_path), "w", export=True)
        assert not short.value.client_side, str(short.value)
    # measure_once_more: recorded, run again under its own tag; a second short export fails.
    recorded = []
    with pytest.raises(perf_bench.WindowStalled) as twice:
        perf_bench.measure_once_more(lambda tag, e: recorded.append((tag, e.what)), WindowServer(500), "http", "host",
                                     500, 1.0, str(tmp_path), "w", export=True)
    assert recorded == [("w", "exported short")] and "(w_again)'s profile export" in str(twice.value)
    shape(500)  # without the export the window is not checked for it
    assert "exported" not in perf_bench.measure(WindowServer(3), "grpc", "host", 500, 1.0, str(tmp_path), "w")


def test_a_stall_is_the_load_generators_only_with_the_server_clean():
    # perf_bench.stalled_at_the_client: only a server that answered, failed nothing of the window,
    # holds nothing and is ready lets a stall be put down to the load generator.
    import perf_bench
    before = {"success": 100, "fail": 2, "pending": 0}
    clean = {"success": 300, "fail": 2, "pending": 0}
    assert perf_bench.stalled_at_the_client(before, clean, True)
    assert not perf_bench.stalled_at_the_client(before, clean, False)  # not ready
    assert not perf_bench.stalled_at_the_client(before, clean, None)  # not answering
    assert not perf_bench.stalled_at_the_client(before, {**clean, "pending": 1}, True)
    assert not perf_bench.stalled_at_the_client(before, {**clean, "pending": None}, True)
    assert not perf_bench.stalled_at_the_client(before, {**clean, "fail": 3}, True)  # a request failed
    assert not perf_bench.stalled_at_the_client(before, {**clean, "success": None}, True)
    assert not perf_bench.stalled_at_the_client({**before, "fail": None}, clean, True)


def test_a_window_the_load_generator_fell_behind_in_runs_once_more(monkeypatch):
    # perf_bench's Note [a window the load generator fell behind in]: a window perf_analyzer said it
    # could not keep up in runs again once, and the second is kept whatever it shows; a stall still
    # runs again as before; without on_delayed the first window is kept.
    import perf_bench
    calls = []

    def fake_measure(server, protocol, io, rate, window_s, work, tag, extra_env=None, export=False):
        calls.append(tag)
        behind = ["[WARNING] Perf Analyzer is not able to keep up with the desired load."]
        return {"tag": tag, "p99_us": 900.0 if len(calls) == 1 else 700.0,
                "delayed": behind if len(calls) <= 2 else []}

    monkeypatch.setattr(perf_bench, "measure", fake_measure)
    recorded = []
    window = perf_bench.measure_once_more(None, "server", "grpc", "host", 2000, 2, "work", "w", on_delayed=lambda tag, w: recorded.append((tag, w["p99_us"])))
    assert calls == ["w", "w_again"] and recorded == [("w", 900.0)]
    assert window["tag"] == "w_again" and window["ran_again"] and window["delayed"]  # kept though delayed again
    calls.clear()
    window = perf_bench.measure_once_more(None, "server", "grpc", "host", 2000, 2, "work", "k")
    assert calls == ["k"] and window["delayed"] and "ran_again" not in window
    calls[:] = ["x", "y", "z"]  # on time from here
    window = perf_bench.measure_once_more(None, "server", "grpc", "host", 2000, 2, "work", "t", on_delayed=recorded.append)
    assert calls[-1] == "t" and "ran_again" not in window and len(recorded) == 1

    def stalling(server, protocol, io, rate, window_s, work, tag, extra_env=None, export=False):
        calls.append(tag)
        if not tag.endswith("_again"):
            raise perf_bench.WindowStalled("stalled", client_side=True)
        return {"tag": tag, "p99_us": 1.0, "delayed": []}

    monkeypatch.setattr(perf_bench, "measure", stalling)
    stalls = []
    window = perf_bench.measure_once_more(lambda tag, e: stalls.append(tag), "server", "grpc", "host", 2000, 2, "work", "s",
                                          on_delayed=recorded.append)
    assert window["tag"] == "s_again" and stalls == ["s"]


def test_a_window_the_hypervisor_took_from_runs_once_more(monkeypatch):
    # perf_bench's Note [a window the hypervisor took from]: a window with steal_limit % or more of all
    # cores' time stolen runs again once, and the second is kept whatever it shows, carrying the first's
    # steal; below the limit, without on_stolen, with a limit of 0, or without steal figures, the first is
    # kept; a window that fell behind as well runs again once, for falling behind.
    import perf_bench
    calls, recorded = [], []
    steals = []  # the steal of each call's window, in order; None: no figures

    def fake_measure(server, protocol, io, rate, window_s, work, tag, extra_env=None, export=False):
        calls.append(tag)
        steal = steals[len(calls) - 1]
        out = {"tag": tag, "p99_us": 900.0, "delayed": ["not able to keep up"] if tag.startswith("late") else []}
        if steal is not None:
            out.update(steal_percent=steal, steal_core_percent=steal * 10, steal_core=len(calls))
        return out

    monkeypatch.setattr(perf_bench, "measure", fake_measure)

    def record(tag, window):
        recorded.append((tag, window["steal_percent"]))

    def once(tag, first, second=0.0, limit=0.2, on_stolen=record, on_delayed=None):
        calls.clear()
        steals[:] = [first, second]
        return perf_bench.measure_once_more(None, "server", "grpc", "host", 2000, 2, "work", tag, on_delayed=on_delayed,
                                            on_stolen=on_stolen, steal_limit=limit)

    window = once("s", 0.35, 0.5)
    assert calls == ["s", "s_again"] and recorded == [("s", 0.35)]
    assert window["tag"] == "s_again" and window["steal_percent"] == 0.5  # kept though stolen from again
    assert window["ran_again_stolen"] == {"steal_percent": 0.35, "steal_core_percent": 3.5, "steal_core": 1}
    window = once("at", 0.2)  # at the limit: runs again
    assert calls == ["at", "at_again"] and window["ran_again_stolen"]["steal_percent"] == 0.2
    recorded.clear()
    for tag, first, limit, on_stolen in (("below", 0.19, 0.2, record), ("no_figures", None, 0.2, record),
                                         ("off", 5.0, 0.0, record), ("no_callback", 5.0, 0.2, None)):
        window = once(tag, first, limit=limit, on_stolen=on_stolen)
        assert calls == [tag] and "ran_again_stolen" not in window and "ran_again" not in window, tag
    assert recorded == []
    delays = []
    window = once("late", 1.5, on_delayed=lambda tag, w: delays.append(tag))
    assert calls == ["late", "late_again"] and delays == ["late"] and recorded == []
    assert window["ran_again"] and "ran_again_stolen" not in window


def test_the_server_queue_splits_into_dispatch_and_waiting_behind_an_earlier_request():
    # perf_bench's Note [where the queue goes], on traces written here (us): one instance serves A (queued
    # at 0, computes 10..110), B (queued at 50, while A computes; starts at 130: 60 behind A, 20 of
    # dispatch) and C (queued at 500 with the instance free; starts at 600: 100 of dispatch). Another
    # model's requests do not count. With two instances B finds one free: all its queue is dispatch.
    import perf_bench

    def trace(model, queued, start, end):
        return {"model": model, "REQUEST_START": queued * 1000 - 5000, "QUEUE_START": queued * 1000,
                "COMPUTE_START": start * 1000, "COMPUTE_END": end * 1000, "REQUEST_END": end * 1000 + 5000}

    def traces():
        return {"a": trace("latency", 0, 10, 110), "b": trace("latency", 50, 130, 230),
                "c": trace("latency", 500, 600, 700), "x": trace("aggressor", 40, 2000, 3000)}

    t = traces()
    rows = perf_bench.server_times_us(t, "latency", -10**9, 10**9)
    assert all(r[5] != r[5] for r in rows)  # not split until marked
    perf_bench.mark_queue_behind(t, "latency")
    rows = sorted(perf_bench.server_times_us(t, "latency", -10**9, 10**9))
    split = {round(r[1]): (round(r[5]), round(r[6])) for r in rows}  # queue -> (behind, dispatch)
    assert split == {10: (0, 10), 80: (60, 20), 100: (0, 100)}, split
    assert "_behind_ns" not in t["x"]
    window = {}
    perf_bench.add_server_percentiles(window, rows)
    assert window["queued_behind"] == 1 and window["traced"] == 3, window
    assert abs(window["behind_p99_us"] - perf_bench.percentile([0.0, 60.0, 0.0], 99)) < 1e-9, window
    t = traces()
    perf_bench.mark_queue_behind(t, "latency", instances=2)
    assert [t[k]["_behind_ns"] for k in "abc"] == [0, 0, 0]
    # A request queued behind one that ends before the queued one starts waits only until that end.
    t = {"a": trace("latency", 0, 0, 300), "b": trace("latency", 100, 400, 500)}
    perf_bench.mark_queue_behind(t, "latency")
    assert (t["a"]["_behind_ns"], t["b"]["_behind_ns"]) == (0, 200_000)


def test_a_soak_window_over_the_bound_is_reported_with_the_servers_own_p99_from_its_traces():
    # soak_bench: each window's server-side p99 comes from the traced requests that started inside it
    # (not its neighbour's), and a window over the bound is named with the client's and the server's p99.
    import soak_bench

    def trace(model, start_ns, queue_us, compute_us):
        q = start_ns + 10_000
        c = q + int(queue_us * 1000)
        e = c + int(compute_us * 1000)
        return {"model": model, "REQUEST_START": start_ns, "QUEUE_START": q, "COMPUTE_START": c,
                "COMPUTE_END": e, "REQUEST_END": e + 5_000, "GRPC_WAITREAD_END": start_ns, "GRPC_SEND_END": e + 20_000}

    traces = {}
    for i in range(200):  # window 1: 100 us at the server; window 2: 1900 us; another model's in window 1
        traces[f"a{i}"] = trace("latency", 1_000_000 + i * 1000, 20, 80)
        traces[f"b{i}"] = trace("latency", 5_000_000 + i * 1000, 900, 1000)
        traces[f"c{i}"] = trace("dynamic", 1_000_000 + i * 1000, 5000, 5000)
    windows = [{"t_s": 30.0, "p99_us": 900.0, "p50_us": 400.0, "start_ns": 1_000_000, "end_ns": 4_000_000},
               {"t_s": 61.0, "p99_us": 2600.0, "p50_us": 450.0, "start_ns": 5_000_000, "end_ns": 8_000_000}]
    soak_bench.add_trace_percentiles(windows, traces)
    assert windows[0]["traced"] == 200 and abs(windows[0]["server_p99_us"] - 100.0) < 1.0, windows[0]
    assert abs(windows[1]["server_p99_us"] - 1900.0) < 1.0 and abs(windows[1]["queue_p99_us"] - 900.0) < 1.0, windows[1]
    failures = soak_bench.window_failures(windows, 2000.0)
    assert len(failures) == 1 and "in 1 of 2 windows" in failures[0], failures
    assert "61 s: client 2600, server 1900" in failures[0], failures
    assert soak_bench.window_failures(windows, 3000.0) == []


def test_a_passing_tests_figures_reach_the_report_file(tmp_path, monkeypatch, capsys):
    # harness.report: what a passing GPU case measured reaches scripts/gpu-triton's output through
    # $TRTET_TRITON_REPORT (pytest shows a passing test's own output to no one), one line a figure.
    path = tmp_path / "report.txt"
    monkeypatch.setenv("TRTET_TRITON_REPORT", str(path))
    harness.report("reload x6", "device MiB free / host RSS MiB after each cycle: 100 / 5.0")
    harness.report("4 MiB inputs", "2 pieces")
    assert path.read_text().splitlines() == ["reload x6: device MiB free / host RSS MiB after each cycle: 100 / 5.0",
                                             "4 MiB inputs: 2 pieces"]
    assert "4 MiB inputs: 2 pieces" in capsys.readouterr().out
    monkeypatch.delenv("TRTET_TRITON_REPORT")
    harness.report("nowhere", "printed only")
    assert path.read_text().count("\n") == 2


def test_split_host_cores_puts_the_server_and_the_load_generators_on_cores_of_their_own(monkeypatch):
    # harness.split_host_cores (perf_bench and soak_bench --client-cores): the real server started
    # after it runs every one of its threads on the server's cores, and this process (with what it
    # starts: perf_analyzer) on the others. A machine of one core cannot split.
    available = os.sched_getaffinity(0)
    assert harness.host_core_split({0, 1, 2, 3}, 1) == ({0, 1, 2}, {3})
    for bad in (0, 4):
        with pytest.raises(ValueError, match="it takes 1 to 3"):
            harness.host_core_split({0, 1, 2, 3}, bad)
    if len(available) < 2:
        pytest.skip(f"needs two host cores to split (this process may use {len(available)})")
    monkeypatch.setattr(harness, "SERVER_CPUS", None)
    repo = tempfile.mkdtemp(prefix="trtet-triton-cores-")
    try:
        server_cores, client_cores = harness.split_host_cores(1)
        assert os.sched_getaffinity(0) == client_cores and not server_cores & client_cores
        child = subprocess.run(["python3", "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                               capture_output=True, text=True, check=True)
        assert child.stdout.strip() == str(sorted(client_cores))  # what the bench starts inherits it
        server = harness.Server(repo)
        try:
            tasks = thread_cores(server.process.pid)
            assert len(tasks) > 1, tasks
            for task, cores in tasks.items():
                assert cores == server_cores, task
        finally:
            server.stop()
    finally:
        os.sched_setaffinity(0, available)


def write_stand_in_traces(path, measured, per_window):
    """A trace file as Triton writes it at `path`.0: for each (start_ns, end_ns, server us) in `measured`,
    `per_window` latency requests spread over the window, each taking that long from queue to compute end."""
    import json as json_
    entries = []
    for k, (start, end, us) in enumerate(measured):
        for i in range(per_window):
            t0 = start + i * (end - start) // per_window
            stamps = {"REQUEST_START": t0, "QUEUE_START": t0, "COMPUTE_START": t0 + 1000,
                      "COMPUTE_END": t0 + int(us * 1000), "REQUEST_END": t0 + int(us * 1000) + 1000}
            entries.append({"id": f"{k}.{i}", "model_name": "latency",
                            "timestamps": [{"name": n, "ns": v} for n, v in stamps.items()]})
    with open(path + ".0", "w") as f:
        json_.dump(entries, f)


def run_stand_in_soak(tmp_path, monkeypatch, capsys, window):
    """soak_bench.main for 0.015 min with the server, perf_analyzer and the clients replaced by stand-ins
    (no GPU). window(k, tag, start_ns) is each latency window: it returns (client p99, server us) or
    raises perf_bench.WindowStalled; the server traces 100 requests over every span it returns for, and
    over each span in `served` (the server's side of a stalled window). Returns (exit status, what the
    soak printed, its JSON)."""
    import json as json_
    import threading
    import perf_bench
    import soak_bench
    measured = []  # (start_ns, end_ns, server us) of each span the stand-in server served

    class Server:
        def __init__(self, repo, env=None, args=()):
            self.trace = next(a.split("file=", 1)[1] for a in args if "file=" in a)
            self.process = type("P", (), {"pid": os.getpid()})()
            self.http_port = self.grpc_port = 0

        def load(self, name):
            return None

        def log(self):
            return "the stand-in server's log"

        def stop(self):  # Triton writes the traces it holds as it exits
            write_stand_in_traces(self.trace, measured, 100)
            return 0

    def measure(server, protocol, io, rate, window_s, work, tag, extra_env=None, export=False):
        assert not export, tag  # a soak window of 60,000 requests asks for no profile export
        start = time.monotonic_ns()
        time.sleep(0.2)
        p99, server_us = window(int(tag.split("_")[1]), tag, start, measured)
        measured.append((start, time.monotonic_ns(), server_us))
        return {"p99_us": p99, "p50_us": 400.0, "throughput": rate, "server_us": 200.0,
                "start_ns": start, "end_ns": time.monotonic_ns()}

    class Client(threading.Thread):
        def __init__(self, port, rate, stop, seed=1):
            super().__init__()
            self.stop = stop
            self.counts = {"good": 50, "wrong": 0, "failed_good": 0, **{k: 1 for k in soak_bench.MALFORMED}}
            self.errors, self.refusals = [], {k: "refused" for k in soak_bench.MALFORMED}

        def run(self):
            self.stop.wait()

    class Aggressor:
        def __init__(self, server, work):
            pass

        def stop(self):
            pass

    monkeypatch.setattr(harness, "gpu_plan_fields", lambda device=0: {})
    monkeypatch.setattr(harness, "write_plan", lambda *a, **k: None)
    monkeypatch.setattr(harness, "make_model", lambda *a, **k: None)
    monkeypatch.setattr(harness, "Server", Server)
    monkeypatch.setattr(perf_bench, "check_values", lambda server, model: None)
    monkeypatch.setattr(perf_bench, "enable_trace", lambda server, model, rate=1, log_frequency=0: None)
    monkeypatch.setattr(perf_bench, "device_memory_mib", lambda: (100, {}))
    monkeypatch.setattr(perf_bench, "AggressorLoad", Aggressor)
    monkeypatch.setattr(perf_bench, "measure", measure)
    monkeypatch.setattr(soak_bench, "DynamicClient", Client)
    out = tmp_path / "soak.json"
    monkeypatch.setattr(sys, "argv", ["soak_bench.py", "--minutes", "0.015", "--warmup-s", "0", "--json", str(out)])
    rc = soak_bench.main()
    return rc, capsys.readouterr().out, json_.loads(out.read_text())


def test_the_soak_end_to_end_on_stand_ins_reports_each_window_with_its_servers_p99_and_a_stalled_window(
        tmp_path, monkeypatch, capsys):
    # soak_bench.main on stand-ins: the traces the server writes as it exits give each window its server
    # p99; a window that stalls with the server at fault is reported and the soak goes on; the verdict
    # names both failures, and the JSON has the windows.
    import perf_bench

    def window(k, tag, start, measured):
        if k == 1:
            raise perf_bench.WindowStalled("perf_analyzer (soak_1) did not finish in 90 s; the stand-in")
        return (2500.0, 1900.0) if k == 2 else (900.0, 100.0)

    rc, said, kept = run_stand_in_soak(tmp_path, monkeypatch, capsys, window)
    assert rc == 1
    verdict = said.strip().splitlines()[-1]
    assert verdict.startswith("soak: 0.015 min, dynamic model 50 served right, 4 malformed refused"), verdict
    assert "1 of " in verdict and "latency windows did not finish" in verdict, verdict
    assert "latency p99 above 2000 us in 1 of " in verdict and "client 2500, server 1900" in verdict, verdict
    assert "window at " in said and "did not finish: perf_analyzer (soak_1)" in said, said
    assert len(kept["stalled"]) == 1 and not kept["client_stalls"] and len(kept["windows"]) >= 3, kept["windows"]
    assert [round(w["server_p99_us"]) for w in kept["windows"][:2]] == [100, 1900], kept["windows"]
    assert all(w["traced"] == 100 for w in kept["windows"])


def test_a_soak_window_whose_load_generator_stalls_with_the_server_clean_runs_again_once(
        tmp_path, monkeypatch, capsys):
    # The S45 stall (perf_analyzer stopped sending; the server had failed nothing, held nothing and was
    # ready): the window runs again and the soak passes, saying so, with the server's own p99 over the
    # stalled span from its traces. A window that stalls so twice fails the soak; so does a clean-server
    # stall whose span the server served above the bound.
    import perf_bench

    def stall(tag, start, measured, server_us=300.0):
        end = time.monotonic_ns()
        measured.append((start, end, server_us))  # what the server did serve of the stalled window
        raise perf_bench.WindowStalled(f"perf_analyzer ({tag}) did not finish; the server completed 22500 of "
                                       "30000 (0 failed), 0 pending", client_side=True, start_ns=start, end_ns=end)

    def once(k, tag, start, measured):
        if tag == "soak_1":
            stall(tag, start, measured)
        return 900.0, 100.0

    rc, said, kept = run_stand_in_soak(tmp_path, monkeypatch, capsys, once)
    verdict = said.strip().splitlines()[-1]
    assert rc == 0 and verdict.endswith("1 window(s) run again after the load generator stalled with the server "
                                        "clean: all checks passed"), verdict
    assert not kept["stalled"] and len(kept["client_stalls"]) == 1, kept
    stalled = kept["client_stalls"][0]
    assert stalled["traced"] == 100 and round(stalled["server_p99_us"]) == 300, stalled
    assert "LOAD GENERATOR STALLED, the window runs again: perf_analyzer (soak_1)" in said, said
    assert "the server's p99 over its span (queue + compute, the whole request; traced requests): 300," in said, said
    assert len(kept["windows"]) >= 2  # soak_1_again measured, and the soak went on

    def twice(k, tag, start, measured):
        if k == 1:
            stall(tag, start, measured)
        return 900.0, 100.0

    rc, said, kept = run_stand_in_soak(tmp_path, monkeypatch, capsys, twice)
    verdict = said.strip().splitlines()[-1]
    assert rc == 1 and "1 of " in verdict and "latency windows did not finish" in verdict, verdict
    assert len(kept["client_stalls"]) == 1 and "(soak_1_again)" in kept["stalled"][0][1], kept

    def slow(k, tag, start, measured):
        if tag == "soak_1":
            stall(tag, start, measured, server_us=2600.0)
        return 900.0, 100.0

    rc, said, kept = run_stand_in_soak(tmp_path, monkeypatch, capsys, slow)
    verdict = said.strip().splitlines()[-1]
    assert rc == 1 and "stalled at the client, and the server's p99 over its span was 2" in verdict, verdict


def test_the_perf_bench_end_to_end_on_stand_ins_prints_its_summary_and_table(tmp_path, monkeypatch, capsys):
    # perf_bench.main over the partitioned layout with the server, perf_analyzer and the aggressor replaced
    # by stand-ins (no GPU), the host cores split: every window is measured, the traces the server writes
    # as it exits give the server percentiles, and the summary and its table come out whole (a
    # formatting slip there would lose a GPU run's figures after the run). One window's load generator
    # stalls with the server clean (as perf_analyzer's did in S45 and S46): it runs again and is reported.
    import json as json_
    import perf_bench
    measured = []  # (start_ns, end_ns, server us)
    tags = []  # every window's tag, in order, and the aggressor's load as "aggressor on" / "aggressor off"
    servers, models = [], {}  # each server's arguments; each model's config text beyond the parameters
    exported = []  # (tag, whether the window asked for perf_analyzer's profile export)

    class Server:
        def __init__(self, repo, env=None, args=()):
            servers.append(list(args))
            self.trace = next((a.split("file=", 1)[1] for a in args if "file=" in a), None)
            self.process = type("P", (), {"pid": os.getpid()})()
            self.http_port = self.grpc_port = 0

        def load(self, name):
            return None

        def stop(self):
            write_stand_in_traces(self.trace, measured, 50)
            return 0

    def measure(server, protocol, io, rate, window_s, work, tag, extra_env=None, export=False):
        tags.append((tag, window_s))
        exported.append((tag, export))
        if tag == "partitioned_grpc_host_1_beside":  # a load generator's stall, the server clean: run again
            raise perf_bench.WindowStalled("perf_analyzer (stand-in) did not finish", client_side=True)
        beside = tag.endswith("_beside") or tag.endswith("_beside_again")
        control = tag.endswith("_control")  # Note [the control]: alone again, here a little slower than alone
        start = time.monotonic_ns()
        measured.append((start, start + 10**6, 150.0 if beside else 120.0 if control else 100.0))
        time.sleep(0.002)  # the next window starts after this one's end
        out = {"requests": 100, "start_ns": start, "end_ns": start + 10**6, "throughput": rate, "delayed": [],
               "p50_us": 400.0, "p90_us": 500.0, "p95_us": 600.0, "p99_us": 990.0 if beside else 945.0 if control else 900.0,
               "phases_us": {p: 1.0 for p in perf_bench.PHASES}}
        if export:  # Note [the client's p99.9]: from the profile export, one window's unreadable
            if tag == "partitioned_http_cuda_0_alone":
                out["export_error"] = "the profile export is empty"
            else:
                out["p999_us"] = 1990.0 if beside else 1500.0
                out[perf_bench.CLIENT_TIMES] = [out["p99_us"]] * 100  # each request's latency (Note [one p99 per side])
                out["served_per_s"] = 1990.0  # Note [calls per second]: the table's, not perf_analyzer's
        for k in ("client_send_us", "network_us", "client_recv_us", "queue_us", "compute_input_us",
                  "compute_infer_us", "compute_output_us"):
            out[k] = 10.0
        out["server_us"] = out["compute_us"] = 40.0
        if tag == "partitioned_http_cuda_1_alone":  # Note [a window the load generator fell behind in]
            out.update(delayed=["[WARNING] Perf Analyzer is not able to keep up with the desired load."],
                       sent_late_max_us=3000.0, steal_percent=1.5, steal_core_percent=30.0, steal_core=3)
        if tag in ("partitioned_http_host_1_beside", "partitioned_grpc_cuda_1_alone", "partitioned_grpc_cuda_warmup_alone",
                   "partitioned_http_cuda_warmup_beside"):
            # Note [a window the hypervisor took from]: a measured window runs again, a warm-up's not
            out.update(steal_percent=0.25, steal_core_percent=2.5, steal_core=7)
        return out

    class Aggressor:
        def __init__(self, server, work, extra_env=None):
            tags.append(("aggressor on", None))

        def stop(self):
            tags.append(("aggressor off", None))

    monkeypatch.setattr(harness, "SERVER_CPUS", None)
    monkeypatch.setattr(harness, "gpu_plan_fields", lambda device=0: {"name": "a stand-in GPU", "sm_count": 132, "granularity": 8})
    monkeypatch.setattr(harness, "write_plan", lambda *a, **k: None)
    monkeypatch.setattr(harness, "make_model", lambda repo, name, **k: models.__setitem__(name, k.get("extra", "")))
    monkeypatch.setattr(harness, "Server", Server)
    for name, stand_in in (("check_values", lambda server, model: None), ("check_device_values", lambda server, model: True),
                           ("enable_trace", lambda *a, **k: tags.append(("trace on", None))),
                           ("device_memory_mib", lambda: (100, {})),
                           ("AggressorLoad", Aggressor), ("measure", measure), ("success_count", lambda server, model: 0),
                           ("sms_probe", lambda server, sms_file: (list(range(32)), list(range(32, 132))))):
        monkeypatch.setattr(perf_bench, name, stand_in)
    available = os.sched_getaffinity(0)

    def bench(*args):
        """perf_bench.main() with these arguments, this process's cores restored after (a --client-cores
        run moves it onto the load generators' cores): (its status, what it printed)."""
        monkeypatch.setattr(sys, "argv", ["perf_bench.py", *args])
        try:
            status = perf_bench.main()
        finally:
            os.sched_setaffinity(0, available)
        return status, capsys.readouterr().out

    monkeypatch.delenv("TRTET_SMALL_COPIES", raising=False)
    status, said = bench("--layouts", "partitioned", "--repeat", "2", "--window", "0.01", "--warmup", "0.02",
                         "--work", str(tmp_path), "--json", str(tmp_path / "perf.json"),
                         *(["--client-cores", "1"] if len(available) > 1 else []))
    assert status == 0, said[-3000:]
    assert "== perf bench summary ==" in said and "partitioned: SM probe: latency engine on 32 SMs, aggressor on 100, shared 0" in said, said[-3000:]
    if len(available) > 1:
        assert "host cores: servers " in said.split("== perf bench summary ==")[1], said[-3000:]
    kept = json_.loads((tmp_path / "perf.json").read_text())
    windows = kept[0]["windows"]
    assert len(windows) == 2 * len(perf_bench.PROTOCOLS) * len(perf_bench.IOS), len(windows)
    assert all(round(w["alone"]["server_p99_us"]) == 100 and round(w["beside"]["server_p99_us"]) == 150 for w in windows)
    assert perf_bench.SERVER_TIMES not in json_.dumps(kept)
    assert "1.50" in said and "1.10" in said, said[-3000:]  # the server's and the client's p99 ratios in the table
    assert "partitioned: 1 window(s) run again after perf_analyzer stalled or failed with the server clean; the first: " \
        "perf_analyzer (stand-in)" in said, said[-3000:]
    assert kept[0]["load_generator_stalls"] == ["perf_analyzer (stand-in) did not finish"]
    # A window perf_analyzer fell behind in says how late its sends were and what the hypervisor took,
    # and runs again (Note [late at the client or on the way], Note [time the hypervisor took]).
    assert ("partitioned_http_cuda_1_alone: perf_analyzer fell behind the rate (client p99 900 us, sent late by up "
            "to 3000 us, steal 1.5% of all cores' time, 30% on core 3), the window runs again") in said, said[-3000:]
    assert "partitioned_http_cuda_1_alone_again" in [t for t, _ in tags]
    # Note [a window the hypervisor took from]: a measured window with 0.25 % of all cores' time stolen
    # runs again, beside as alone, and the row counts it; the warm-up window with as much does not; the
    # window that fell behind (and had 1.5 % stolen) ran again once, for falling behind.
    assert ("partitioned_http_host_1_beside: the hypervisor took 0.25% of all cores' time (2.5% on core 7; client "
            "p99 990 us), at or above 0.2%, the window runs again") in said, said[-3000:]
    assert "partitioned_grpc_cuda_1_alone: the hypervisor took 0.25%" in said, said[-3000:]
    assert {"partitioned_http_host_1_beside_again", "partitioned_grpc_cuda_1_alone_again"} <= {t for t, _ in tags}
    assert not any(t.endswith("warmup_alone_again") or t.endswith("warmup_beside_again") for t, _ in tags), tags
    by_row = {(w["protocol"], w["io"], w["rep"]): w for w in windows}
    assert by_row[("http", "host", 1)]["beside"]["ran_again_stolen"] == {"steal_percent": 0.25, "steal_core_percent": 2.5,
                                                                         "steal_core": 7}
    assert by_row[("grpc", "cuda", 1)]["alone"]["ran_again_stolen"]["steal_percent"] == 0.25
    assert "ran_again" in by_row[("http", "cuda", 1)]["alone"] and "ran_again_stolen" not in by_row[("http", "cuda", 1)]["alone"]
    assert sum("ran_again_stolen" in side for w in windows for side in perf_bench.sides(w)) == 2
    for prefix in ("partitioned http  host ", "partitioned grpc  cuda "):
        table = [line for line in said.splitlines() if line.startswith(prefix)]
        assert table and table[0].endswith("(1 windows run again where the hypervisor took 0.2% or more)"), table
    # Note [late at the client or on the way], from the traces the server wrote: the stand-in's 50
    # requests a window came 20 us apart where the rate's schedule has them 500 us apart, so the first
    # came 49 x 480 us "late" against the last; the stand-in's windows have no export, so no send times.
    late_rows = [line for line in said.splitlines() if line.startswith("  partitioned grpc host  sent ")]
    assert late_rows and "| received 23520->23520 23520->23520 |" in late_rows[0], late_rows
    assert late_rows[0].startswith("  partitioned grpc host  sent nan->nan nan->nan |"), late_rows
    # Note [warm-up and order]: first one unmeasured window alone and one beside the aggressor per protocol
    # and I/O, --warmup long, and none of them among the measured windows; then the pairs, alone first in
    # pair 0 and beside first in pair 1, the aggressor running exactly through each beside window.
    pairs = [(p, io) for p in perf_bench.PROTOCOLS for io in perf_bench.IOS]
    warmup = [(f"partitioned_{p}_{io}_warmup_{side}", 0.02) for p, io in pairs for side in ("alone", "beside")]
    windows_only = [t for t in tags if not t[0].startswith("aggressor") and t[0] != "trace on"]
    trace_on = [t for t, _ in tags if not t.startswith("aggressor")].index("trace on")
    assert trace_on == len(warmup), tags  # the warm-up's requests are not traced, every measured one is
    assert windows_only[:len(warmup)] == warmup, windows_only[:len(warmup)]
    assert kept[0]["warmup_windows"] == len(warmup) and "partitioned: warm-up: 8 windows of 0.02 s, not measured" in said
    measured_tags = [t for t, _ in windows_only[len(warmup):] if not t.endswith("_flush")]
    assert all(w == 0.01 for t, w in windows_only[len(warmup):] if not t.endswith("_flush"))
    assert measured_tags[:2] == ["partitioned_grpc_host_0_alone", "partitioned_grpc_host_0_beside"], measured_tags
    assert measured_tags[8:11] == ["partitioned_grpc_host_1_beside", "partitioned_grpc_host_1_beside_again",
                                   "partitioned_grpc_host_1_alone"], measured_tags
    state = "off"
    for tag, _ in tags:  # the aggressor is on for beside windows only
        if tag.startswith("aggressor"):
            assert tag != f"aggressor {state}", tags
            state = tag.split()[1]
        else:
            assert (state == "on") == ("_beside" in tag), (tag, tags)
    assert "beside first in odd pairs) after 0.02 s warm-up windows" in said, said[-3000:]
    assert "over gRPC; a window run again where the hypervisor took 0.2% of all cores' time or more; " in said, said[-3000:]
    # Note [the client's p99.9]: every measured window asks for the export, no warm-up window does; the
    # table gives the p99.9, and a window whose export could not be read is said, not hidden.
    assert all(e == ("_warmup_" not in t and not t.endswith("_flush")) for t, e in exported), exported
    lines = said.splitlines()
    table = next(i for i, line in enumerate(lines) if line.startswith("layout ") and "p99.9 al->bes" in line)
    row = lines[table + 1]
    assert row.startswith("partitioned grpc  host") and "1500->1990" in row, (lines[table], row)
    assert "1.10 (1.50)" in row, row  # the row's readings, client (server), both pooled
    assert "1990/1990" in row, row  # Note [calls per second]: from the exports, not perf_analyzer's 2000
    # Note [where the queue goes]: the stand-in's requests overlap, so all but the first wait behind one
    queue_rows = [line for line in lines if line.startswith("  partitioned grpc host  queue ")]
    assert queue_rows and "| behind another 49->49 of 50->50" in queue_rows[0], queue_rows
    # Note [one p99 per side]: each row's reading pooled over its windows, kept in the JSON; a row with
    # a window whose export was not read has no pooled client p99 and says so (the pairs' median, *).
    readings = next(i for i, line in enumerate(lines) if line.startswith("layout ") and "alone spread" in line)
    by_row = {line[:22].split()[1] + "_" + line[:22].split()[2]: line for line in lines[readings + 1:readings + 5]}
    assert "900->990" in by_row["grpc_host"] and "200/200" in by_row["grpc_host"], by_row
    assert "(not pooled)  1.10*" in by_row["http_cuda"] and "100->150" in by_row["http_cuda"], by_row
    pooled = kept[0]["pooled"]
    assert pooled["grpc_host"]["client"]["ratio"] == 1.1 and pooled["http_cuda"]["client"] is None, pooled
    assert round(pooled["http_cuda"]["server"]["ratio"], 2) == 1.5 and perf_bench.CLIENT_TIMES not in json_.dumps(kept)
    assert "client p99.9 not read in 1 window(s) (nan in the table); the first: the profile export is empty" in said
    assert "rate_limiter" not in models["latency"] + models["aggressor"] and servers[0].count("--rate-limit=execution_count") == 0
    assert "; cores kept awake: none" in said and not any("keep-cores-awake" in a for a in servers[0]), servers[0]
    assert kept[0]["host_settings"].endswith("; cores kept awake: none"), kept[0]["host_settings"]
    # How the servers move small host copies, in every run's host settings (TRTET_SMALL_COPIES unset here).
    assert "; small copies: chunks of at most 64 KiB by the copy kernel (TRTET_SMALL_COPIES unset);" \
        in kept[0]["host_settings"], kept[0]["host_settings"]

    # --keep-cores-awake (Note [the cores kept awake]): the server is told to keep its cores awake, and
    # perf_analyzer's core gets a spinner for the measuring, stopped before the summary.
    servers.clear()
    started = []
    real_keep = perf_bench.keep_cores_awake
    monkeypatch.setattr(perf_bench, "keep_cores_awake", lambda cores: started.append(real_keep(cores)) or started[-1])
    monkeypatch.setattr(perf_bench, "SERVER_AWAKE_ARGS", [])
    monkeypatch.setenv("TRTET_SMALL_COPIES", "engines")
    status, said = bench("--layouts", "whole", "--repeat", "1", "--window", "0.01", "--warmup", "0", "--keep-cores-awake",
                         "--work", str(tmp_path / "awake"), *(["--client-cores", "1"] if len(available) > 1 else []))
    assert "; small copies: TRTET_SMALL_COPIES='engines';" in said, said[-3000:]
    monkeypatch.delenv("TRTET_SMALL_COPIES")
    cores = sorted(available)
    server_cores = cores[:-1] if len(available) > 1 else cores
    expected = f"--backend-config=torchtrt_executorch,keep-cores-awake={','.join(map(str, server_cores))}"
    assert servers and all(expected in args for args in servers), (expected, servers)
    assert f"; cores kept awake: the servers' {','.join(map(str, server_cores))} (keep-cores-awake)" in said, said[-3000:]
    if len(available) > 1:
        assert f", perf_analyzer's {cores[-1]} (SCHED_IDLE spinners)" in said, said[-3000:]
        assert len(started) == 1 and len(started[0]) == 1 and started[0][0].poll() is not None, started
    else:
        assert not started

    # --keep-cores-awake with --latency-cores, the next runs' settings (docs/SERVING.md, "How the next
    # runs are read", S61), on a stand-in split of five cores (this machine may have two): the servers'
    # keep-cores-awake names their cores and the latency model's own, the latency model's server gets
    # the host policy, its instance group names it, and the host settings say whether its cores are
    # whole physical cores.
    servers.clear(), models.clear()

    def five_core_split(client_cores):
        harness.SERVER_CPUS = {0, 1, 2, 3}
        return {0, 1, 2, 3}, {4}
    real_split = harness.split_host_cores
    monkeypatch.setattr(harness, "split_host_cores", five_core_split)
    class Spinner:  # a stand-in process on a core this machine may not have
        def poll(self):
            return 0

        def wait(self):
            return 0
    monkeypatch.setattr(perf_bench, "keep_cores_awake", lambda cores: started.append(list(cores)) or [Spinner()])
    monkeypatch.setattr(perf_bench, "LATENCY_POLICY_ARGS", [])
    monkeypatch.setattr(perf_bench, "CLIENT_CORES", None)
    monkeypatch.setattr(perf_bench, "host_core_siblings",
                        lambda own=(): f"5 physical cores, none shared (no SMT siblings); own {list(own)}")
    started.clear()
    status, said = bench("--layouts", "partitioned", "--repeat", "1", "--window", "0.01", "--warmup", "0",
                         "--keep-cores-awake", "--client-cores", "1", "--latency-cores", "2",
                         "--work", str(tmp_path / "awake-own"), "--json", str(tmp_path / "awake-own.json"))
    assert status == 0, said[-3000:]
    assert "host cores: servers 0,1, the latency model's instance threads 2,3, perf_analyzer 4" in said, said[:2000]
    assert servers and all("--backend-config=torchtrt_executorch,keep-cores-awake=0,1,2,3" in a for a in servers), servers
    assert all(f"--host-policy={perf_bench.LATENCY_POLICY},cpu-cores=2-3" in a for a in servers), servers
    assert f'host_policy: "{perf_bench.LATENCY_POLICY}"' in models["latency"], models["latency"]
    assert started == [[4]], started  # perf_analyzer's core: the bench's spinner
    settings = json_.loads((tmp_path / "awake-own.json").read_text())[0]["host_settings"]
    assert settings.endswith("cores' siblings: 5 physical cores, none shared (no SMT siblings); own [2, 3]; small copies: "
                             "chunks of at most 64 KiB by the copy kernel (TRTET_SMALL_COPIES unset); cores kept "
                             "awake: the servers' 0,1,2,3 (keep-cores-awake), perf_analyzer's 4 (SCHED_IDLE spinners)"), settings
    # main() set these for its run; the cases below run without them
    perf_bench.LATENCY_POLICY_ARGS, perf_bench.CLIENT_CORES, harness.SERVER_CPUS = [], None, None
    monkeypatch.setattr(harness, "split_host_cores", real_split)

    # --rate-limiter shared applies on the whole GPU (a partition shares no SMs to ration): both models'
    # instance groups ask for the one global resource, each with its priority, and the server rations it.
    servers.clear(), models.clear()
    status, said = bench("--layouts", "whole", "--repeat", "1", "--window", "0.01", "--warmup", "0",
                         "--rate-limiter", "shared", "--work", str(tmp_path / "whole"))
    assert status == 0, said[-3000:]
    assert models["latency"] == perf_bench.instance_group_text(1, "latency", rate_limited=True)
    assert models["aggressor"] == perf_bench.instance_group_text(1, "aggressor", rate_limited=True)
    assert servers == [[a for a in servers[0] if a != "--rate-limit=execution_count"] + ["--rate-limit=execution_count"]]
    assert "whole: rate limiter: both models' instances need the one copy of global resource 'gpu'" in said, said[-3000:]
    assert "rate limiter shared" in said and "no warm-up" in said, said[-3000:]
    assert "The control" not in said and "control" not in json_.dumps(kept)  # only when asked for

    # --control (Note [the control]): each pair ends with a window alone again, the aggressor off, traced
    # like the others; the summary gives its p99 / the first alone window's at the client and the server.
    tags.clear()
    status, said = bench("--layouts", "whole", "--repeat", "2", "--window", "0.01", "--warmup", "0", "--control",
                         "--work", str(tmp_path / "control"), "--json", str(tmp_path / "control.json"))
    assert status == 0, said[-3000:]
    measured_tags = [t for t, _ in tags if not t.startswith("aggressor") and t != "trace on" and not t.endswith("_flush")]
    assert measured_tags[:3] == ["whole_grpc_host_0_alone", "whole_grpc_host_0_beside", "whole_grpc_host_0_control"]
    assert measured_tags[12:15] == ["whole_grpc_host_1_beside", "whole_grpc_host_1_alone", "whole_grpc_host_1_control"]
    assert len(measured_tags) == 3 * 2 * len(perf_bench.PROTOCOLS) * len(perf_bench.IOS), measured_tags
    state = "off"
    for tag, _ in tags:
        if tag.startswith("aggressor"):
            state = tag.split()[1]
        elif tag.endswith("_control"):
            assert state == "off", (tag, tags)
    kept = json_.loads((tmp_path / "control.json").read_text())
    assert all(round(w["control"]["server_p99_us"]) == 120 and w["control"]["p99_us"] == 945.0 for w in kept[0]["windows"])
    table = said.split("The control (Note [the control])")[1]
    lines = [line.split() for line in table.splitlines()]
    assert ["whole", "grpc", "host", "1.05,1.05", "1.20,1.20", "1.10,1.10", "1.50,1.50"] in lines, table
    assert "a control window alone ends each pair" in said, said[-3000:]


def test_the_soaks_memory_verdict_reads_only_the_samples_after_the_warm_up():
    # soak_bench.memory_failures: flat after the warm-up passes whatever the warm-up did; a move past
    # the slack, a reading that failed (-1) or too few samples fail, each naming what.
    import soak_bench
    flat_rss = [(0, 300.0), (10, 420.0), (70, 424.0), (80, 425.0), (90, 424.5)]
    flat_dev = [(1, 500), (35, 638), (66, 638), (97, 638)]
    assert soak_bench.memory_failures(flat_rss, flat_dev, 60, 32, 4) == []
    grown = soak_bench.memory_failures(flat_rss + [(100, 470.0)], flat_dev, 60, 32, 4)
    assert len(grown) == 1 and grown[0].startswith("host RSS moved 424 to 470 MiB"), grown
    leaked = soak_bench.memory_failures(flat_rss, flat_dev + [(128, 650)], 60, 32, 4)
    assert len(leaked) == 1 and leaked[0].startswith("device memory moved 638 to 650 MiB"), leaked
    unread = soak_bench.memory_failures(flat_rss, flat_dev + [(128, -1)], 60, 32, 4)
    assert unread == ["device memory could not be read"], unread
    short = soak_bench.memory_failures(flat_rss, [(1, 500), (66, 638)], 60, 32, 4)
    assert short == ["device memory: 1 sample(s) after the 60 s warm-up; 2 at least"], short


def test_the_perf_benchs_instances_each_get_a_partition_named_as_the_backend_asks():
    # Several instances of a model on a plan take <partition>_<k> each (model_partitions.cpp); the perf
    # bench's --instances wrote one 'latency' partition for two instances, and the load was refused.
    import perf_bench
    gpu = harness.plan_dict([])["gpu"]
    assert perf_bench.latency_partitions(1, gpu) == [("latency", perf_bench.LAT_SMS)]
    two = perf_bench.latency_partitions(2, gpu)
    assert [n for n, _ in two] == ["latency_0", "latency_1"], two
    assert sum(s for _, s in two) == perf_bench.LAT_SMS and all(s % gpu["granularity"] == 0 for _, s in two), two
    assert [n for n, _ in perf_bench.latency_partitions(4, gpu)] == [f"latency_{k}" for k in range(4)]
    with pytest.raises(ValueError, match="cannot split 32 SMs"):
        perf_bench.latency_partitions(8, gpu)


def test_the_server_stays_ready_after_the_refusals(server):
    assert server.client.is_server_live() and server.client.is_server_ready()


# ---- on a GPU ----

def elementwise_inputs():
    rng = np.random.default_rng(7)
    return rng.standard_normal((8, 64), dtype=np.float32), rng.standard_normal((8, 64), dtype=np.float32)


def infer(client, model, x, y, names=("input_0", "input_1", "output_0"), binary_output=False):
    """`model`'s output for inputs x and y over HTTP host I/O; binary_output asks for it as binary data
    (a large output), not JSON."""
    inputs = [httpclient.InferInput(names[0], list(x.shape), "FP32"), httpclient.InferInput(names[1], list(y.shape), "FP32")]
    inputs[0].set_data_from_numpy(x)
    inputs[1].set_data_from_numpy(y)
    outputs = [httpclient.InferRequestedOutput(names[2], binary_data=True)] if binary_output else None
    return client.infer(model, inputs, outputs=outputs).as_numpy(names[2])


def random_request_served_right(client, model, rng):
    """One request of a random shape within [8, 64] (values of its own) to `model`, 2x - 0.5y checked:
    its shape where the answer is wrong, else None."""
    shape = (int(rng.integers(1, 9)), int(rng.integers(4, 65)))
    x = rng.standard_normal(shape, dtype=np.float32)
    y = rng.standard_normal(shape, dtype=np.float32)
    got = infer(client, model, x, y)
    return None if got.shape == shape and np.allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6) else shape


def run_clients(clients, timeout_s):
    """Runs each (function, seed) of `clients` on a thread of its own, all at once, and waits for them;
    fails naming the timeout where one is still running after it."""
    import threading
    threads = [threading.Thread(target=fn, args=(seed,)) for fn, seed in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout_s)
    assert not any(t.is_alive() for t in threads), f"a client did not finish in {timeout_s} s"


@needs_gpu
def test_sm_count_off_the_granularity_is_refused_with_the_closest(server, repo):
    harness.make_model(repo, "sms_30", pte="triton_elementwise", parameters={"sms": "30"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    message = refused(server, "sms_30")
    assert "partitions of 30 SMs on GPU 0" in message and "granularity" in message, message
    assert "closest request the GPU accepts: 32" in message, message


@needs_gpu
def test_kind_cpu_is_refused(server, repo):
    harness.make_model(repo, "kind_cpu", pte="triton_elementwise",
                       extra='instance_group [ { kind: KIND_CPU count: 1 } ]\n')
    message = refused(server, "kind_cpu")
    assert "KIND_CPU" in message and "runs on a GPU only" in message, message


@needs_gpu
def test_a_gpu_the_machine_lacks_is_refused(server, repo):
    harness.make_model(repo, "gpu_missing", pte="triton_elementwise",
                       extra=f'instance_group [ {{ kind: KIND_GPU count: 1 gpus: [ {GPUS} ] }} ]\n')
    message = refused(server, "gpu_missing")
    # The server may refuse the index itself before the backend sees it; either names the GPU.
    assert f"GPU {GPUS}" in message or f"gpu id {GPUS}" in message, message
    harness.make_model(repo, "plan_missing_gpu", pte="triton_elementwise",
                       parameters={f"plan_file.{GPUS}": "plan.json"})
    harness.write_plan(os.path.join(repo, "plan_missing_gpu", "plan.json"), [("plan_missing_gpu", 16)],
                       gpu=harness.gpu_plan_fields())
    message = refused(server, "plan_missing_gpu")
    assert f"parameter 'plan_file.{GPUS}' names GPU {GPUS}; this machine has {GPUS} GPU" in message, message


@needs_gpu
def test_serves_host_io_with_statistics_and_survives_a_bad_request(server, repo):
    harness.make_model(repo, "elementwise", pte="triton_elementwise", parameters={"sms": "16", "gpu_time_every": "1"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    assert server.load("elementwise") is None, server.log()[-3000:]
    # The server names the group elementwise_0 and its instance elementwise_0_0.
    assert "instance 'elementwise_0_0' on GPU 0, a green-context partition of 16 SMs" in server.log()
    config = server.client.get_model_config("elementwise")
    assert [i["name"] for i in config["input"]] == ["input_0", "input_1"]  # auto-completed
    x, y = elementwise_inputs()
    for _ in range(5):
        np.testing.assert_allclose(infer(server.client, "elementwise", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    # A request of a shape beyond the program's bound fails with the bound; the next one is served.
    with pytest.raises(InferenceServerException) as bad:
        infer(server.client, "elementwise", np.zeros((9, 64), np.float32), np.zeros((9, 64), np.float32))
    assert "input 'input_0' has shape [9, 64]; the program takes 2 dims within [8, 64]" in str(bad.value), str(bad.value)
    assert "dim 0 is 9, above its bound 8" in str(bad.value), str(bad.value)
    assert bad.value.status() in ("400", 400), bad.value.status()
    np.testing.assert_allclose(infer(server.client, "elementwise", y, x), 2 * y - 0.5 * x, rtol=1e-6, atol=1e-6)
    stats = server.client.get_inference_statistics("elementwise")["model_stats"][0]
    assert int(stats["inference_stats"]["success"]["count"]) == 6
    assert int(stats["execution_count"]) >= 6
    assert int(stats["inference_stats"]["compute_infer"]["ns"]) > 0
    # The engine's GPU time (Note [engine GPU time]): one measurement per successful request, more
    # than nothing and less than the host's compute time around it; host I/O is staged by the delegate.
    assert server.metric("trtet_engine_gpu_requests", "elementwise") == 6
    engine_us = server.metric("trtet_engine_gpu_duration_us", "elementwise")
    assert 0 < engine_us * 1e3 < int(stats["inference_stats"]["compute_infer"]["ns"]), engine_us
    assert server.metric("trtet_staging_gpu_duration_us", "elementwise") > 0
    # The delegate's calls on the host (its host event), within the host's compute time and above the
    # GPU time of the engine it waited for (host I/O returns with the outputs written).
    delegate_us = server.metric("trtet_delegate_host_duration_us", "elementwise")
    assert engine_us < delegate_us and delegate_us * 1e3 < int(stats["inference_stats"]["compute_infer"]["ns"]), \
        (delegate_us, engine_us)
    # Where the backend's time goes (Note [request phases]): the sums reach the counters every 32
    # successful requests. Before the 32nd, none; after it, the phases of Triton's three compute
    # figures add up to them (one request per execute: the backend reported those very points).
    assert not server.metric("trtet_request_phase_requests", "elementwise")
    for _ in range(32 - 6):
        infer(server.client, "elementwise", x, y)
    assert server.metric("trtet_request_phase_requests", "elementwise") == 32
    text = server.metrics_text()
    phase = {p: server.metric("trtet_request_phase_duration_us", "elementwise", text=text, phase=p)
             for p in ("response_new", "inputs", "outputs", "execute", "stream_wait", "late_outputs", "send", "release",
                       "method")}
    assert all(v is not None and v >= 0 for v in phase.values()), phase
    assert phase["execute"] > 0 and phase["inputs"] > 0, phase
    assert 0 < phase["method"] <= phase["execute"], phase  # Method::execute, within Module::execute
    stats = server.client.get_inference_statistics("elementwise")["model_stats"][0]["inference_stats"]
    assert int(stats["success"]["count"]) == 32
    for figure, parts in (("compute_input", ("response_new", "inputs", "outputs")),
                          ("compute_infer", ("execute", "stream_wait", "late_outputs")),
                          ("compute_output", ("send",))):
        triton_us = int(stats[figure]["ns"]) / 1e3
        ours = sum(phase[p] for p in parts)
        assert abs(ours - triton_us) <= max(0.02 * triton_us, 5.0), (figure, ours, triton_us, phase)
    server.unload("elementwise")


@needs_gpu
def test_a_request_the_delegate_refuses_fails_with_its_message_and_the_server_serves_on(server, repo):
    # triton_outside declares [8, 64] inputs (the config is completed from it, so Triton's own shape
    # check passes every request), but its engine's profile ends at 4 rows: each request reaches the
    # delegate, which refuses it. Whole-GPU instances: no split to share with the other tests.
    one_gpu = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    harness.make_model(repo, "outside", pte="triton_outside", extra=one_gpu)
    harness.make_model(repo, "inside", pte="triton_elementwise", extra=one_gpu)  # the same engine kind
    harness.make_model(repo, "other", pte="triton_latency", extra=one_gpu)       # another, sharing nothing
    for name in ("outside", "inside", "other"):
        assert server.load(name) is None, server.log()[-3000:]
    x, y = elementwise_inputs()
    refusals = 0
    for _ in range(3):
        with pytest.raises(InferenceServerException) as bad:
            infer(server.client, "outside", x, y)
        refusals += 1
        message = str(bad.value)
        assert "torchtrt_executorch: model 'outside' instance 'outside_0_0': execute" in message, message
        assert "dimension 0 = 8 is outside the engine's profile" in message, message
        assert bad.value.status() in ("400", 400), bad.value.status()  # INVALID_ARG, not an internal error
    # The same server, and the same instance thread's neighbours, serve good requests at once.
    np.testing.assert_allclose(infer(server.client, "inside", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    lx, ly = (np.linspace(-1, 1, 1024, dtype=np.float32).reshape(1, 1024), np.ones((1, 1024), np.float32))
    np.testing.assert_allclose(infer(server.client, "other", lx, ly), 2 * lx - 0.5 * ly, rtol=1e-6, atol=1e-6)
    # The refusing instance still answers (with the same refusal), and the server stays ready.
    with pytest.raises(InferenceServerException) as again:
        infer(server.client, "outside", x, y)
    refusals += 1
    assert "outside the engine's profile" in str(again.value)
    assert server.client.is_server_ready() and server.client.is_model_ready("outside")
    stats = server.client.get_inference_statistics("outside")["model_stats"][0]["inference_stats"]
    assert int(stats["fail"]["count"]) == refusals and int(stats["success"]["count"]) == 0, stats
    # Every request was answered and released: the models unload (the server waits for requests it
    # still counts as held before it finalizes a model).
    for name in ("outside", "inside", "other"):
        server.unload(name)
    assert server.client.is_server_ready()


@needs_gpu
def test_serves_device_io_through_cuda_shared_memory(server, repo):
    cupy = pytest.importorskip("cupy", reason="device I/O needs cupy to make the CUDA buffers")
    harness.make_model(repo, "elementwise_dev", pte="triton_elementwise", parameters={"sms": "16", "gpu_time_every": "1"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    assert server.load("elementwise_dev") is None, server.log()[-3000:]
    x, y = elementwise_inputs()
    nbytes = x.nbytes
    with cupy.cuda.Device(0):
        buffers = {"x": harness.cuda_region_array(x.size, values=x), "y": harness.cuda_region_array(y.size, values=y),
                   "out": harness.cuda_region_array(x.size)}
        cupy.cuda.Device(0).synchronize()
        import base64
        for n, buf in buffers.items():
            handle = cupy.cuda.runtime.ipcGetMemHandle(buf.data.ptr)
            server.client.register_cuda_shared_memory(f"trtet_{n}", base64.b64encode(handle), 0, nbytes)
        try:
            inputs = [httpclient.InferInput("input_0", [8, 64], "FP32"), httpclient.InferInput("input_1", [8, 64], "FP32")]
            inputs[0].set_shared_memory("trtet_x", nbytes)
            inputs[1].set_shared_memory("trtet_y", nbytes)
            output = httpclient.InferRequestedOutput("output_0", binary_data=True)
            output.set_shared_memory("trtet_out", nbytes)
            server.client.infer("elementwise_dev", inputs, outputs=[output])
            got = buffers["out"].get().reshape(8, 64)
            np.testing.assert_allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
            # Device I/O is bound in place: the engine ran, the delegate staged nothing.
            assert server.metric("trtet_engine_gpu_requests", "elementwise_dev") == 1
            assert server.metric("trtet_engine_gpu_duration_us", "elementwise_dev") > 0
            assert server.metric("trtet_staging_gpu_duration_us", "elementwise_dev") == 0
        finally:
            server.client.unregister_cuda_shared_memory()
    server.unload("elementwise_dev")


@needs_gpu
def test_programs_shaped_like_todays_exports_are_served_right(server, repo):
    # triton_boundary (out = 2x - 0.5y) and triton_cpu_ops (4x + 0.5y): the program plans x, y and its
    # output in host memory, et_copy moves them into and out of a CUDA-planned arena around the
    # delegate, cpu_ops runs CPU operators before and after. The backend hands a host input to
    # ExecuTorch, which copies it into the program's memory; gathers a CUDA shared-memory input into
    # host memory first; and copies the planned output into the response once the call is done, with
    # the shape it came out with. Several shapes within the bound, each twice, with host I/O and with
    # CUDA shared memory; one shape over the bound refused, and the next request served.
    one_gpu = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    programs = {"boundary": ("triton_boundary", lambda x, y: 2 * x - 0.5 * y),
                "cpu_ops": ("triton_cpu_ops", lambda x, y: 4 * x + 0.5 * y)}
    for name, (pte, _) in programs.items():
        harness.make_model(repo, name, pte=pte, extra=one_gpu)
        assert server.load(name) is None, server.log()[-3000:]
    rng = np.random.default_rng(17)
    for name, (_, expected) in programs.items():
        for shape in ((8, 64), (3, 17), (1, 4), (8, 64)):
            x = rng.standard_normal(shape, dtype=np.float32)
            y = rng.standard_normal(shape, dtype=np.float32)
            for _ in range(2):  # the same call twice
                got = infer(server.client, name, x, y)
                assert got.shape == shape, (name, got.shape, shape)
                np.testing.assert_allclose(got, expected(x, y), rtol=1e-5, atol=1e-5)
        with pytest.raises(InferenceServerException) as bad:
            infer(server.client, name, np.zeros((9, 64), np.float32), np.zeros((9, 64), np.float32))
        assert "dim 0 is 9, above its bound 8" in str(bad.value), str(bad.value)
        x, y = elementwise_inputs()
        np.testing.assert_allclose(infer(server.client, name, x, y), expected(x, y), rtol=1e-5, atol=1e-5)
    cupy = pytest.importorskip("cupy", reason="CUDA shared memory needs cupy to make the CUDA buffers")
    import base64
    bound = 8 * 64 * 4
    with cupy.cuda.Device(0):
        buffers = {n: harness.cuda_region_array(bound // 4) for n in ("x", "y", "out")}
        for n, buf in buffers.items():
            handle = cupy.cuda.runtime.ipcGetMemHandle(buf.data.ptr)
            server.client.register_cuda_shared_memory(f"trtet_planned_{n}", base64.b64encode(handle), 0, bound)
        try:
            for name, (_, expected) in programs.items():
                for shape in ((8, 64), (5, 33), (5, 33)):
                    x = rng.standard_normal(shape, dtype=np.float32)
                    y = rng.standard_normal(shape, dtype=np.float32)
                    buffers["x"][:x.size].set(x.ravel())
                    buffers["y"][:y.size].set(y.ravel())
                    buffers["out"].fill(np.nan)
                    cupy.cuda.Device(0).synchronize()
                    inputs = [httpclient.InferInput("input_0", list(shape), "FP32"),
                              httpclient.InferInput("input_1", list(shape), "FP32")]
                    inputs[0].set_shared_memory("trtet_planned_x", x.nbytes)
                    inputs[1].set_shared_memory("trtet_planned_y", y.nbytes)
                    output = httpclient.InferRequestedOutput("output_0", binary_data=True)
                    output.set_shared_memory("trtet_planned_out", bound)
                    result = server.client.infer(name, inputs, outputs=[output])
                    assert [int(d) for d in result.get_output("output_0")["shape"]] == list(shape), result.get_response()
                    got = buffers["out"][:x.size].get().reshape(shape)
                    np.testing.assert_allclose(got, expected(x, y), rtol=1e-5, atol=1e-5)
        finally:
            server.client.unregister_cuda_shared_memory()
    for name in programs:
        server.unload(name)


@needs_gpu
def test_large_tensors_are_served_right_whether_they_arrive_in_pieces_or_in_cuda_shared_memory(tmp_path):
    # triton_large: the elementwise engine over [1024, 1024] at most (4 MiB a tensor). Over HTTP a large
    # binary input reaches the backend in one buffer or several, as the frontend read the body (S52 on
    # the H200: one); several are gathered into host memory of the input's own, which the verbose log
    # says (the gather itself is tested on the CPU, gather_test.cpp, with pieces it controls). The
    # delegate stages 4 MiB in and out. Several shapes, each twice; then the full size through CUDA
    # shared memory, bound in place: nothing gathered. A server of its own, with the verbose log.
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    harness.make_model(repo, "large", pte="triton_large", extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    s = harness.Server(repo, args=["--log-verbose=1"])
    try:
        assert s.load("large") is None, s.log()[-3000:]
        rng = np.random.default_rng(23)
        for shape in ((1024, 1024), (1000, 1023), (3, 1024), (1024, 1024)):
            x = rng.standard_normal(shape, dtype=np.float32)
            y = rng.standard_normal(shape, dtype=np.float32)
            for _ in range(2):
                got = infer(s.client, "large", x, y, binary_output=True)  # 4 MiB: not as JSON
                assert got.shape == shape, (got.shape, shape)
                np.testing.assert_allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
        pieces = [int(n) for n in re.findall(r"model 'large': input 'input_[01]' \(\d+ bytes\) came in (\d+) piece\(s\) "
                                             r"from host memory: gathered into host memory", s.log())]
        harness.report("4 MiB inputs", f"HTTP inputs that came in several pieces: {len(pieces)} (pieces: {sorted(set(pieces))})")
        cupy = pytest.importorskip("cupy", reason="CUDA shared memory needs cupy to make the CUDA buffers")
        import base64
        x = rng.standard_normal((1024, 1024), dtype=np.float32)
        y = rng.standard_normal((1024, 1024), dtype=np.float32)
        with cupy.cuda.Device(0):
            buffers = {"x": harness.cuda_region_array(x.size, values=x), "y": harness.cuda_region_array(y.size, values=y),
                       "out": harness.cuda_region_array(x.size)}
            cupy.cuda.Device(0).synchronize()
            for n, buf in buffers.items():
                handle = cupy.cuda.runtime.ipcGetMemHandle(buf.data.ptr)
                s.client.register_cuda_shared_memory(f"trtet_large_{n}", base64.b64encode(handle), 0, x.nbytes)
            try:
                before = s.log().count("came in")
                for _ in range(2):
                    inputs = [httpclient.InferInput("input_0", [1024, 1024], "FP32"),
                              httpclient.InferInput("input_1", [1024, 1024], "FP32")]
                    inputs[0].set_shared_memory("trtet_large_x", x.nbytes)
                    inputs[1].set_shared_memory("trtet_large_y", y.nbytes)
                    output = httpclient.InferRequestedOutput("output_0", binary_data=True)
                    output.set_shared_memory("trtet_large_out", x.nbytes)
                    s.client.infer("large", inputs, outputs=[output])
                    np.testing.assert_allclose(buffers["out"].get().reshape(1024, 1024), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
                assert s.log().count("came in") == before  # bound in place: nothing gathered
            finally:
                s.client.unregister_cuda_shared_memory()
    finally:
        s.stop()


@needs_gpu
def test_two_instances_on_partitions_of_their_own_serve_concurrent_clients_right(tmp_path):
    # Threads and streams at once through the server: two instances of one model, each on a partition of
    # 16 SMs of its own (its own stream and Module), four clients at once, each request of its own shape
    # and values, every output checked; both instances served (their GPU-time counters, one request timed
    # in one). A server of its own: the model splits the device for itself.
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    harness.make_model(repo, "multi", pte="triton_elementwise", parameters={"sms": "16", "gpu_time_every": "1"},
                       extra='instance_group [ { kind: KIND_GPU count: 2 gpus: [ 0 ] } ]\n')
    s = harness.Server(repo)
    try:
        assert s.load("multi") is None, s.log()[-3000:]
        for k in (0, 1):
            assert f"instance 'multi_0_{k}' on GPU 0, a green-context partition of 16 SMs" in s.log(), s.log()[-3000:]
        failures, served = [], []

        def client(seed):
            c = httpclient.InferenceServerClient(s.url, network_timeout=60.0, connection_timeout=30.0)
            rng = np.random.default_rng(seed)
            try:
                for _ in range(25):
                    wrong = random_request_served_right(c, "multi", rng)
                    if wrong is not None:
                        failures.append((seed, wrong))
                    served.append(1)
            except Exception as e:  # reported below, with the thread's seed
                failures.append((seed, repr(e)[:300]))
            finally:
                c.close()

        run_clients([(client, seed) for seed in range(4)], 120)
        assert not failures and len(served) == 100, (failures, len(served))
        stats = s.client.get_inference_statistics("multi")["model_stats"][0]["inference_stats"]
        assert int(stats["success"]["count"]) == 100 and int(stats["fail"]["count"]) == 0, stats
        per_instance = [s.metric("trtet_engine_gpu_requests", "multi", instance=f"multi_0_{k}") for k in (0, 1)]
        assert all(n is not None and n > 0 for n in per_instance) and sum(per_instance) == 100, per_instance
    finally:
        s.stop()


@needs_gpu
def test_cuda_graphs_through_the_server_replay_with_each_requests_own_values(server, repo):
    # use_cuda_graphs passed through to the delegate: each call signature is captured on its second call
    # and replayed after. Every request carries values of its own, so a replay that read an earlier
    # request's inputs or wrote where an earlier response was would show. Host I/O at several shapes,
    # four calls each, shapes interleaved; then CUDA shared memory from two pairs of regions in turn
    # (two signatures by address), four calls each.
    one_gpu = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    harness.make_model(repo, "graphs", pte="triton_elementwise", parameters={"use_cuda_graphs": "true"}, extra=one_gpu)
    assert server.load("graphs") is None, server.log()[-3000:]
    rng = np.random.default_rng(29)
    for _ in range(4):
        for shape in ((8, 64), (2, 16), (8, 64), (5, 40)):
            x = rng.standard_normal(shape, dtype=np.float32)
            y = rng.standard_normal(shape, dtype=np.float32)
            got = infer(server.client, "graphs", x, y)
            assert got.shape == shape, (got.shape, shape)
            np.testing.assert_allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    cupy = pytest.importorskip("cupy", reason="CUDA shared memory needs cupy to make the CUDA buffers")
    import base64
    nbytes = 8 * 64 * 4
    with cupy.cuda.Device(0):
        buffers = {f"{n}{k}": harness.cuda_region_array(8 * 64) for n in ("x", "y", "out") for k in (0, 1)}
        for n, buf in buffers.items():
            handle = cupy.cuda.runtime.ipcGetMemHandle(buf.data.ptr)
            server.client.register_cuda_shared_memory(f"trtet_graphs_{n}", base64.b64encode(handle), 0, nbytes)
        try:
            for call in range(8):
                k = call % 2
                x = rng.standard_normal((8, 64), dtype=np.float32)
                y = rng.standard_normal((8, 64), dtype=np.float32)
                buffers[f"x{k}"].set(x.ravel())
                buffers[f"y{k}"].set(y.ravel())
                buffers[f"out{k}"].fill(np.nan)
                cupy.cuda.Device(0).synchronize()
                inputs = [httpclient.InferInput("input_0", [8, 64], "FP32"), httpclient.InferInput("input_1", [8, 64], "FP32")]
                inputs[0].set_shared_memory(f"trtet_graphs_x{k}", nbytes)
                inputs[1].set_shared_memory(f"trtet_graphs_y{k}", nbytes)
                output = httpclient.InferRequestedOutput("output_0", binary_data=True)
                output.set_shared_memory(f"trtet_graphs_out{k}", nbytes)
                server.client.infer("graphs", inputs, outputs=[output])
                np.testing.assert_allclose(buffers[f"out{k}"].get().reshape(8, 64), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6,
                                           err_msg=f"call {call}, regions {k}")
        finally:
            server.client.unregister_cuda_shared_memory()
    server.unload("graphs")


@needs_gpu
def test_a_model_loaded_and_unloaded_again_and_again_serves_right_and_gives_its_memory_back(tmp_path):
    # Explicit model control, as users reload a model: load, serve (host I/O), unload, six times, on a
    # partition of its own. The driver keeps 4 MiB for every green context made and destroyed, so the
    # split is kept at unload and the next load of the same SMs takes it back (Note [keeping a split
    # for the next load]; S52 measured 4 MiB lost a cycle before it). After the first cycle (the
    # server's and CUDA's own one-time memory), the GPU's free memory stays within 8 MiB over five more,
    # and the server's host memory within 32 MiB. Then a model of another SM count splits the device
    # anew and serves, and the first loads again onto its kept split. A server of its own.
    cupy = pytest.importorskip("cupy", reason="the GPU's free memory is read through cupy")
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    harness.make_model(repo, "again", pte="triton_elementwise", parameters={"sms": "16"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    harness.make_model(repo, "other", pte="triton_elementwise", parameters={"sms": "24"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    s = harness.Server(repo)
    kept = "GPU 0: the partitions of 16 SMs are an earlier load's, kept for model 'again'"
    rng = np.random.default_rng(31)

    try:
        samples = []
        for cycle in range(6):
            assert s.load("again") is None, (cycle, s.log()[-3000:])
            for _ in range(5):
                x = rng.standard_normal((8, 64), dtype=np.float32)
                y = rng.standard_normal((8, 64), dtype=np.float32)
                np.testing.assert_allclose(infer(s.client, "again", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
            s.unload("again")
            with cupy.cuda.Device(0):
                free, _ = cupy.cuda.runtime.memGetInfo()
            samples.append((free / 2**20, harness.rss_mib(s.process.pid)))
        free_first, rss_first = samples[0]
        lost = max(free_first - free for free, _ in samples[1:])
        grown = max(rss - rss_first for _, rss in samples[1:])
        harness.report("reload x6", "device MiB free / host RSS MiB after each cycle: " +
                       ", ".join(f"{free:.0f} / {rss:.1f}" for free, rss in samples))
        assert lost <= 8.0 and grown <= 32.0, ("device MiB free, host RSS MiB after each cycle", samples)
        assert s.log().count(kept) == 5, s.log()[-3000:]  # every load after the first took the kept split
        for name, sms in (("other", 24), ("again", 16)):
            assert s.load(name) is None, (name, s.log()[-3000:])
            x = rng.standard_normal((8, 64), dtype=np.float32)
            y = rng.standard_normal((8, 64), dtype=np.float32)
            np.testing.assert_allclose(infer(s.client, name, x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
            s.unload(name)
        assert "the partitions of 24 SMs are an earlier load's" not in s.log()  # a split of its own
        assert s.log().count(kept) == 6, s.log()[-3000:]
    finally:
        s.stop()


ENSEMBLE_OF_TWO_STEPS = """name: "chain"
platform: "ensemble"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, -1 ] }, { name: "y" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
output [ { name: "z" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
ensemble_scheduling { step [
  { model_name: "step" model_version: -1 input_map { key: "input_0" value: "x" } input_map { key: "input_1" value: "y" }
    output_map { key: "output_0" value: "mid" } },
  { model_name: "step" model_version: -1 input_map { key: "input_0" value: "mid" } input_map { key: "input_1" value: "y" }
    output_map { key: "output_0" value: "z" } } ] }
"""


def test_the_gpu_cases_ensemble_is_a_config_triton_takes(tmp_path, monkeypatch):
    # ENSEMBLE_OF_TWO_STEPS (the GPU case below) in the real server on the CPU, its step a model of
    # triton_elementwise's inputs and output at a fixed [8, 64] on Triton's Python backend: the server takes
    # the ensemble's config (its tensors, the steps' maps) and the ensemble is ready, so the GPU case fails
    # only on what this backend does. (Not its values: the Python backend's stub here hands numpy 2's arrays
    # back with no bytes, so the second step would see an empty input.)
    try:
        env = harness.python_backend_models(str(tmp_path), ["step"], [8, 64])
    except harness.Unavailable as e:
        pytest.skip(str(e))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TRTET_TRITON_PRELOAD", raising=False)
    harness.make_model(str(tmp_path / "repo"), "chain", config=ENSEMBLE_OF_TWO_STEPS)
    s = harness.Server(str(tmp_path / "repo"))
    try:
        assert s.load("step") is None, s.log()[-3000:]
        assert s.load("chain") is None, s.log()[-3000:]
        states = {m["name"]: m.get("state") for m in s.client.get_model_repository_index()}
        assert states.get("chain") == "READY" and s.client.is_model_ready("chain"), states
        config = s.client.get_model_config("chain")
        assert [step["model_name"] for step in config["ensemble_scheduling"]["step"]] == ["step", "step"], config
    finally:
        s.stop()


@needs_gpu
def test_an_ensemble_of_two_steps_passes_its_intermediate_between_them_right(tmp_path):
    # A Triton ensemble whose two steps are this backend's model: the first step's output, in a buffer
    # Triton's ensemble allocates where the backend asks (the GPU), is the second step's input, so
    # z = 2(2x - 0.5y) - 0.5y = 4x - 1.5y. Several shapes, each twice; the step model executed twice
    # per request. A server of its own.
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    harness.make_model(repo, "step", pte="triton_elementwise", extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    harness.make_model(repo, "chain", config=ENSEMBLE_OF_TWO_STEPS)
    s = harness.Server(repo)
    try:
        assert s.load("step") is None, s.log()[-3000:]
        assert s.load("chain") is None, s.log()[-3000:]
        rng = np.random.default_rng(37)
        for shape in ((8, 64), (3, 17), (8, 64), (1, 4)):
            x = rng.standard_normal(shape, dtype=np.float32)
            y = rng.standard_normal(shape, dtype=np.float32)
            for _ in range(2):
                got = infer(s.client, "chain", x, y, names=("x", "y", "z"))
                assert got.shape == shape, (got.shape, shape)
                np.testing.assert_allclose(got, 4 * x - 1.5 * y, rtol=1e-5, atol=1e-5)
        stats = s.client.get_inference_statistics("step")["model_stats"][0]["inference_stats"]
        assert int(stats["success"]["count"]) == 16 and int(stats["fail"]["count"]) == 0, stats
    finally:
        s.stop()


@needs_gpu
def test_one_split_per_device_shared_by_plan(server, repo):
    plan = os.path.join(repo, "shared_plan.json")
    gpu = harness.gpu_plan_fields()
    harness.write_plan(plan, [("alpha", 16), ("beta", 16)], gpu=gpu)
    harness.make_model(repo, "alpha", pte="triton_elementwise", parameters={"plan_file": plan},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    harness.make_model(repo, "beta", pte="triton_elementwise", parameters={"plan_file": plan},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    assert server.load("alpha") is None, server.log()[-3000:]
    assert server.load("beta") is None, server.log()[-3000:]
    # Another split of the same device would share SMs: refused, naming the plan that holds it.
    harness.make_model(repo, "own_split", pte="triton_elementwise", parameters={"sms": "16"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    message = refused(server, "own_split")
    assert "GPU 0 is already split by plan" in message, message
    # A partition the plan does not have.
    harness.make_model(repo, "gamma", pte="triton_elementwise", parameters={"plan_file": plan},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    assert "has no partition 'gamma'" in refused(server, "gamma")
    x, y = elementwise_inputs()
    np.testing.assert_allclose(infer(server.client, "alpha", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(infer(server.client, "beta", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    server.unload("alpha")
    server.unload("beta")
    # The split went with its last model: the device can be split again.
    assert server.load("own_split") is None, server.log()[-3000:]
    server.unload("own_split")


@needs_gpu
def test_a_several_gpu_plan_file_is_checked_on_each_gpu_and_serves(server, repo):
    gpu = harness.gpu_plan_fields()
    # Device 0's plan made on another kind of GPU: refused before any split, naming the device.
    other = dict(gpu, name="NVIDIA H100 PCIe", sm_count=114, max_partitioned_sms=112)
    harness.make_model(repo, "plans_shape", pte="triton_elementwise", parameters={"plan_file": "plans.json"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    harness.write_plans(os.path.join(repo, "plans_shape", "plans.json"), {0: harness.plan_dict([("plans_shape", 16)], gpu=other)})
    message = refused(server, "plans_shape")
    assert "partition plan: device 0: it was made on 'NVIDIA H100 PCIe'" in message, message
    # A several-GPU file naming this GPU: the model takes its partition from device 0's plan.
    plans = os.path.join(repo, "plans_one.json")
    harness.write_plans(plans, {0: harness.plan_dict([("plans_one", 16)], remainder="spare", gpu=gpu)})
    harness.make_model(repo, "plans_one", pte="triton_elementwise", parameters={"plan_file": plans},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    assert server.load("plans_one") is None, server.log()[-3000:]
    assert "instance 'plans_one_0_0' on GPU 0, a green-context partition of 16 SMs (plan partition 'plans_one')" in server.log()
    x, y = elementwise_inputs()
    np.testing.assert_allclose(infer(server.client, "plans_one", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    server.unload("plans_one")


@pytest.mark.skipif(GPUS < 2, reason=f"needs two GPUs (this machine has {GPUS})")
def test_one_plan_file_for_two_gpus_one_model_on_each(server, repo):
    plans = os.path.join(repo, "plans_two.json")
    harness.write_plans(plans, {d: harness.plan_dict([("left", 16), ("right", 24)], gpu=harness.gpu_plan_fields(d))
                                for d in (0, 1)})
    for name, device in (("left", 0), ("right", 1)):
        harness.make_model(repo, name, pte="triton_elementwise", parameters={"plan_file": plans},
                           extra=f'instance_group [ {{ kind: KIND_GPU count: 1 gpus: [ {device} ] }} ]\n')
        assert server.load(name) is None, server.log()[-3000:]
    log = server.log()
    assert "instance 'left_0_0' on GPU 0, a green-context partition of 16 SMs (plan partition 'left')" in log
    assert "instance 'right_0_0' on GPU 1, a green-context partition of 24 SMs (plan partition 'right')" in log
    x, y = elementwise_inputs()
    for name in ("left", "right"):
        np.testing.assert_allclose(infer(server.client, name, x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    # Each device is split once, by that file: a model with its own sms on GPU 1 is refused.
    harness.make_model(repo, "own_on_1", pte="triton_elementwise", parameters={"sms": "16"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 1 ] } ]\n')
    assert "GPU 1 is already split by plan" in refused(server, "own_on_1")
    for name in ("left", "right"):
        server.unload(name)


@needs_gpu
def test_a_sticky_cuda_error_makes_the_server_not_ready_and_every_later_request_fails_with_its_cause():
    # Note [the fault domain] (triton/src/fault_rule.h): an illegal address on one model's partition
    # loses the process's CUDA context for every model. A server of its own (this one is stopped).
    repo = tempfile.mkdtemp(prefix="trtet-triton-fault-")
    plan = os.path.join(repo, "plan.json")
    harness.write_plan(plan, [("faulty", 16), ("bystander", 16)], gpu=harness.gpu_plan_fields())
    one_gpu = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    harness.make_model(repo, "faulty", pte="triton_fault", parameters={"plan_file": plan}, extra=one_gpu)
    harness.make_model(repo, "bystander", pte="triton_elementwise", parameters={"plan_file": plan}, extra=one_gpu)
    server = harness.Server(repo)
    try:
        for name in ("faulty", "bystander"):
            assert server.load(name) is None, server.log()[-3000:]
        x, y = elementwise_inputs()
        x[0, 0] = 1.0
        np.testing.assert_allclose(infer(server.client, "faulty", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(infer(server.client, "bystander", x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
        assert server.client.is_server_ready()
        bad = x.copy()
        bad[0, 0] = 13.0  # the engine's fault_if value: an illegal address on the GPU
        with pytest.raises(InferenceServerException) as fault:
            infer(server.client, "faulty", bad, y)
        t_fault = time.monotonic()
        message = str(fault.value)
        assert "model 'faulty' instance 'faulty_0_0'" in message and "illegal memory access" in message, message
        assert "CUDA context is lost" in message, message
        # Readiness goes false within 1 s (the server stops: liveness too).
        not_ready_after = None
        while time.monotonic() - t_fault < 5:
            try:
                ready = server.client.is_server_ready()
            except Exception:
                ready = False
            if not ready:
                not_ready_after = time.monotonic() - t_fault
                break
            time.sleep(0.01)
        assert not_ready_after is not None and not_ready_after < 1.0, not_ready_after
        harness.report("sticky error", f"not ready {not_ready_after * 1e3:.0f} ms after the faulting request's answer")
        # The log gives the cause.
        log = server.log()
        assert "this process's CUDA context is lost: model 'faulty' instance 'faulty_0_0'" in log, log[-3000:]
        assert "cudaErrorIllegalAddress" in log, log[-3000:]
        # The bystander on its own partition fails fast from now on: with the cause where the backend
        # answers, or the server's own refusal once it is stopping.
        for _ in range(3):
            t0 = time.monotonic()
            with pytest.raises(InferenceServerException) as later:
                infer(server.client, "bystander", x, y)
            assert time.monotonic() - t0 < 1.0
            text = str(later.value)
            assert ("CUDA context was lost" in text and "illegal memory access" in text) or \
                re.search(r"not ready|unavailable|exiting|not found|unknown model|no available version|stopping", text,
                          re.I), text
    finally:
        server.stop()


@needs_gpu
def test_dynamic_shapes_are_served_within_the_bound_and_refused_beyond_it(server, repo):
    # Note [dynamic shapes]: triton_elementwise's tensors are DYNAMIC_BOUND [8, 64] and its engine's
    # profile covers [1, 4]..[8, 64]: the config says [-1, -1], every shape within is served with its
    # own shape in the response, and one beyond the bound is refused naming the bound.
    one_gpu = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    harness.make_model(repo, "dynamic", pte="triton_elementwise", extra=one_gpu)
    assert server.load("dynamic") is None, server.log()[-3000:]
    config = server.client.get_model_config("dynamic")
    assert [[int(d) for d in i["dims"]] for i in config["input"]] == [[-1, -1], [-1, -1]], config
    assert [int(d) for d in config["output"][0]["dims"]] == [-1, -1], config
    rng = np.random.default_rng(11)
    for shape in ((1, 4), (3, 17), (8, 64), (5, 64), (2, 4)):
        x = rng.standard_normal(shape, dtype=np.float32)
        y = rng.standard_normal(shape, dtype=np.float32)
        got = infer(server.client, "dynamic", x, y)
        assert got.shape == shape, (got.shape, shape)
        np.testing.assert_allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
    for shape, broken in (((9, 64), "dim 0 is 9, above its bound 8"), ((8, 65), "dim 1 is 65, above its bound 64")):
        with pytest.raises(InferenceServerException) as bad:
            infer(server.client, "dynamic", np.zeros(shape, np.float32), np.zeros(shape, np.float32))
        assert f"input 'input_0' has shape {list(shape)}; the program takes 2 dims within [8, 64]" in str(bad.value), \
            str(bad.value)
        assert broken in str(bad.value), str(bad.value)
    # Another rank: Triton's own check against the config's two dims refuses it first.
    with pytest.raises(InferenceServerException) as bad:
        infer(server.client, "dynamic", np.zeros((1, 2, 4), np.float32), np.zeros((1, 2, 4), np.float32))
    # (Triton names whichever input it checks first: input_1 on the H200.)
    assert re.search(r"unexpected shape for input 'input_[01]'.*Expected \[-1,-1\], got \[1,2,4\]", str(bad.value)), \
        str(bad.value)
    # A config narrowing the rows to 4 exactly (Triton checks the fixed dim; the backend the rest).
    io = SMALL_IO.replace("dims: [ 8, 64 ]", "dims: [ 4, -1 ]")
    harness.make_model(repo, "narrow4", pte="triton_elementwise",
                       config=f'backend: "torchtrt_executorch"\n{io}' + one_gpu)
    assert server.load("narrow4") is None, server.log()[-3000:]
    x = rng.standard_normal((4, 33), dtype=np.float32)
    np.testing.assert_allclose(infer(server.client, "narrow4", x, x), 1.5 * x, rtol=1e-6, atol=1e-6)
    with pytest.raises(InferenceServerException):
        infer(server.client, "narrow4", np.zeros((3, 33), np.float32), np.zeros((3, 33), np.float32))
    server.unload("dynamic")
    server.unload("narrow4")


@needs_gpu
def test_priority_max_gives_a_whole_gpu_instance_the_highest_stream_priority(server, repo):
    # optimization.priority PRIORITY_MAX: on the whole GPU the instance's stream is CUDA's highest
    # priority (a negative number on these GPUs) and serves right values; on a partition the setting
    # is not applied, and the log says so.
    rng = np.random.default_rng(11)
    group = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
    harness.make_model(repo, "prio_whole", pte="triton_elementwise",
                       extra=group + "optimization { priority: PRIORITY_MAX }\n")
    harness.make_model(repo, "prio_part", pte="triton_elementwise", parameters={"sms": "16"},
                       extra=group + "optimization { priority: PRIORITY_MAX }\n")
    for name in ("prio_whole", "prio_part"):
        assert server.load(name) is None, server.log()[-3000:]
    line = re.search(r"instance 'prio_whole_0_0' on GPU 0, the whole GPU \(no partition asked for\); stream_wait sync; "
                     r"PRIORITY_MAX \(stream priority (-?\d+)\)", server.log())
    assert line is not None, server.log()[-3000:]
    assert int(line.group(1)) < 0, line.group(0)
    assert ("model 'prio_part' instance 'prio_part_0_0': optimization.priority PRIORITY_MAX is not applied on a "
            "partition's stream") in server.log()
    for name in ("prio_whole", "prio_part"):
        for _ in range(10):
            x = rng.standard_normal((8, 64), dtype=np.float32)
            y = rng.standard_normal((8, 64), dtype=np.float32)
            np.testing.assert_allclose(infer(server.client, name, x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
        server.unload(name)


@needs_gpu
def test_dynamic_batching_serves_each_request_its_own_rows(tmp_path):
    # Note [batching requests]: max_batch_size 8 over triton_elementwise ([8, 64], dynamic) with
    # Triton's dynamic batcher holding requests up to 20 ms. Eight HTTP clients at once send requests of
    # 1 to 3 rows, most 64 wide (batched together), some 32 wide (another call), and one client every
    # request of its own CUDA shared memory (its rows gathered on the GPU); one in 16 from another
    # client is 65 wide, beyond the bound: refused with it while the rest of its execute is served.
    # Every output is checked; Triton's statistics show calls of several requests (executions fewer
    # than requests) and count every row. Then the same with send_from completion_thread.
    import base64
    cupy = pytest.importorskip("cupy", reason="the device I/O client needs cupy to make the CUDA buffers")
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    batching = ('max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 20000 }\n'
                'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    for name, send_from in (("batched", "instance"), ("batched_thread", "completion_thread")):
        harness.make_model(repo, name, pte="triton_elementwise", parameters={"sms": "16", "send_from": send_from},
                           config='backend: "torchtrt_executorch"\n' + batching)
    s = harness.Server(repo)
    try:
        for name in ("batched", "batched_thread"):
            assert s.load(name) is None, s.log()[-3000:]
            assert "max_batch_size 8: requests batched along dim 0" in s.log(), s.log()[-3000:]
            failures, rows_served, refusals, requests_served = [], [], [], []

            def host_client(seed):
                c = httpclient.InferenceServerClient(s.url, network_timeout=60.0, connection_timeout=30.0)
                rng = np.random.default_rng(1000 * seed + len(name))
                try:
                    for k in range(48):
                        cols = 65 if seed == 1 and k % 16 == 15 else (32 if k % 5 == 4 else 64)
                        shape = (int(rng.integers(1, 4)), cols)
                        x = rng.standard_normal(shape, dtype=np.float32)
                        y = rng.standard_normal(shape, dtype=np.float32)
                        try:
                            got = infer(c, name, x, y)
                        except InferenceServerException as e:
                            if cols == 65 and "dim 1 is 65, above its bound 64" in str(e):
                                refusals.append(1)
                            else:
                                failures.append((seed, shape, str(e)[:300]))
                            continue
                        if cols == 65:
                            failures.append((seed, "a request beyond the bound was served"))
                        elif got.shape != shape or not np.allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6):
                            failures.append((seed, shape))
                        rows_served.append(shape[0])
                        requests_served.append(1)
                except Exception as e:  # reported below, with the thread's seed
                    failures.append((seed, repr(e)[:300]))
                finally:
                    c.close()

            def device_client(seed):
                c = httpclient.InferenceServerClient(s.url, network_timeout=60.0, connection_timeout=30.0)
                rng = np.random.default_rng(7000 + seed)
                nbytes = 3 * 64 * 4
                regions = []
                try:
                    with cupy.cuda.Device(0):
                        bufs = {n: harness.cuda_region_array(3 * 64) for n in ("x", "y", "out")}
                        for n, buf in bufs.items():
                            region = f"{name}_{seed}_{n}"
                            handle = cupy.cuda.runtime.ipcGetMemHandle(buf.data.ptr)
                            c.register_cuda_shared_memory(region, base64.b64encode(handle), 0, nbytes)
                            regions.append(region)
                        for _ in range(32):
                            rows = int(rng.integers(1, 4))
                            x = rng.standard_normal((rows, 64), dtype=np.float32)
                            y = rng.standard_normal((rows, 64), dtype=np.float32)
                            bufs["x"][: rows * 64].set(x.ravel())
                            bufs["y"][: rows * 64].set(y.ravel())
                            cupy.cuda.Device(0).synchronize()
                            inputs = [httpclient.InferInput("input_0", [rows, 64], "FP32"),
                                      httpclient.InferInput("input_1", [rows, 64], "FP32")]
                            inputs[0].set_shared_memory(regions[0], rows * 64 * 4)
                            inputs[1].set_shared_memory(regions[1], rows * 64 * 4)
                            output = httpclient.InferRequestedOutput("output_0", binary_data=True)
                            output.set_shared_memory(regions[2], rows * 64 * 4)
                            c.infer(name, inputs, outputs=[output])
                            got = bufs["out"][: rows * 64].get().reshape(rows, 64)
                            if not np.allclose(got, 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6):
                                failures.append((seed, "device", rows))
                            rows_served.append(rows)
                            requests_served.append(1)
                except Exception as e:  # reported below, with the thread's seed
                    failures.append((seed, repr(e)[:300]))
                finally:
                    for region in regions:
                        try:
                            c.unregister_cuda_shared_memory(region)
                        except Exception:
                            pass
                    c.close()

            run_clients([(host_client, seed) for seed in range(6)] + [(device_client, seed) for seed in (6, 7)], 180)
            assert not failures, failures[:10]
            assert len(refusals) == 3 and len(requests_served) == 6 * 48 - 3 + 2 * 32, (len(refusals), len(requests_served))
            deadline = time.monotonic() + 10
            while True:
                stats = s.client.get_inference_statistics(name)["model_stats"][0]
                if int(stats["inference_stats"]["success"]["count"]) == len(requests_served) or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert int(stats["inference_stats"]["success"]["count"]) == len(requests_served), stats
            assert int(stats["inference_count"]) == sum(rows_served), (stats, sum(rows_served))
            assert 0 < int(stats["execution_count"]) < len(requests_served), stats  # calls of several requests
            s.unload(name)
    finally:
        s.stop()


@needs_gpu
def test_responses_sent_from_a_completion_thread_are_right_and_counted(tmp_path):
    # Note [sending from a completion thread]: the instance hands each finished request to a thread of
    # its own, which sends, reports and releases it. Four HTTP clients at once, each request of its own
    # shape and values, every output checked; every tenth request of one client beyond the bound,
    # refused with it, the next one served. The statistics count every request once (taken after the
    # client has its response, so polled for), and the request phases add up to Triton's compute
    # input and infer as in the instance's thread, with compute output (the hand-over) within the
    # `send` phase (the hand-over and the send). Then gRPC (perf_analyzer, four at once). Loaded and
    # unloaded twice: the thread stops with its instance once every request is finished.
    import perf_bench
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    harness.make_model(repo, "send_thread", pte="triton_elementwise",
                       parameters={"sms": "16", "gpu_time_every": "1", "send_from": "completion_thread"},
                       extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
    s = harness.Server(repo)
    try:
        for cycle in range(2):
            assert s.load("send_thread") is None, s.log()[-3000:]
            assert ("instance 'send_thread_0_0' on GPU 0, a green-context partition of 16 SMs; stream_wait sync; "
                    "responses sent from a completion thread") in s.log(), s.log()[-3000:]

            def counted():
                stats = s.client.get_inference_statistics("send_thread")["model_stats"][0]["inference_stats"]
                return stats, s.metric("trtet_request_phase_requests", "send_thread") or 0
            stats0, phased0 = counted()
            failures, served, refusals = [], [], []

            def client(seed):
                c = httpclient.InferenceServerClient(s.url, network_timeout=60.0, connection_timeout=30.0)
                rng = np.random.default_rng(100 * cycle + seed)
                try:
                    for k in range(40 + (4 if seed == 0 else 0)):
                        if seed == 0 and k % 11 == 10:  # 4 of them: refused with the bound, the next served
                            try:
                                infer(c, "send_thread", np.zeros((9, 64), np.float32), np.zeros((9, 64), np.float32))
                                failures.append((seed, "a request beyond the bound was served"))
                            except InferenceServerException as e:
                                if "dim 0 is 9, above its bound 8" not in str(e):
                                    failures.append((seed, str(e)[:300]))
                                refusals.append(1)
                            continue
                        wrong = random_request_served_right(c, "send_thread", rng)
                        if wrong is not None:
                            failures.append((seed, wrong))
                        served.append(1)
                except Exception as e:  # reported below, with the thread's seed
                    failures.append((seed, repr(e)[:300]))
                finally:
                    c.close()

            run_clients([(client, seed) for seed in range(4)], 120)
            assert not failures and len(served) == 160 and len(refusals) == 4, (failures, len(served), len(refusals))
            deadline = time.monotonic() + 10
            while True:
                stats, phased = counted()
                done = (int(stats["success"]["count"]) - int(stats0["success"]["count"]) == 160
                        and phased - phased0 == 160)
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert int(stats["success"]["count"]) - int(stats0["success"]["count"]) == 160, (stats0, stats)
            assert int(stats["fail"]["count"]) - int(stats0["fail"]["count"]) == 4, (stats0, stats)
            assert phased - phased0 == 160, (phased0, phased)  # 5 flushes of 32
            if cycle == 0:  # the counters start with the instance: these sums are this cycle's alone
                text = s.metrics_text()
                phase = {p: s.metric("trtet_request_phase_duration_us", "send_thread", text=text, phase=p)
                         for p in ("response_new", "inputs", "outputs", "execute", "stream_wait", "late_outputs", "send",
                                   "release")}
                for figure, parts in (("compute_input", ("response_new", "inputs", "outputs")),
                                      ("compute_infer", ("execute", "stream_wait", "late_outputs"))):
                    triton_us = int(stats[figure]["ns"]) / 1e3
                    ours = sum(phase[p] for p in parts)
                    assert abs(ours - triton_us) <= max(0.02 * triton_us, 5.0), (figure, ours, triton_us, phase)
                assert int(stats["compute_output"]["ns"]) / 1e3 <= phase["send"] + 5.0, (stats["compute_output"], phase)
            binary, env = perf_bench.perf_analyzer_command()
            csv_path = os.path.join(repo, f"send_thread_{cycle}.csv")
            done = subprocess.run([binary, "-m", "send_thread", "-u", f"127.0.0.1:{s.grpc_port}", "-i", "grpc",
                                   "--concurrency-range", "4", "--request-count", "400", "-f", csv_path,
                                   "--shape", "input_0:8,64", "--shape", "input_1:8,64"],
                                  capture_output=True, text=True, env=env, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
            assert float(perf_bench.read_csv(csv_path)["Inferences/Second"]) > 0
            s.unload("send_thread")  # raises where the model is still loaded after 30 s (a request never released)
    finally:
        s.stop()


@needs_gpu
def test_every_stream_wait_serves_right_values(server, repo):
    # Note [waiting for the stream]: each way of waiting answers with the call's values, on a partition.
    rng = np.random.default_rng(5)
    for wait in ("sync", "spin", "yield", "callback"):
        name = f"wait_{wait}"
        harness.make_model(repo, name, pte="triton_elementwise", parameters={"sms": "16", "stream_wait": wait},
                           extra='instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n')
        assert server.load(name) is None, server.log()[-3000:]
        assert f"instance '{name}_0_0' on GPU 0, a green-context partition of 16 SMs; stream_wait {wait}" in server.log()
        for _ in range(20):
            x = rng.standard_normal((8, 64), dtype=np.float32)
            y = rng.standard_normal((8, 64), dtype=np.float32)
            np.testing.assert_allclose(infer(server.client, name, x, y), 2 * x - 0.5 * y, rtol=1e-6, atol=1e-6)
        server.unload(name)
