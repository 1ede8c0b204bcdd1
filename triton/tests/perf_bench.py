"""Two models served at once, measured the way Triton's users measure it: with Triton's perf_analyzer
(scripts/gpu-triton on the H200). The models are the serving bench's (serving_bench.py):

  latency    triton_latency.pte: one wave of 32 blocks of 25 us (test engine "waves", records its SMs;
             its SM marker kernel runs only during an SM probe, record_sms=probe)
  aggressor  triton_aggressor.pte: 2048 blocks of 50 us (about 1 ms a call on 100 SMs)

Three layouts:
  partitioned  one server; a plan file: "latency" on 32 SMs, the remainder ("aggressor") for the aggressor
  whole        one server; both models on the whole GPU (Triton's usual way)
  mps          two servers, one model each, under MPS (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE sized like the
               partitions: 32 of the GPU's SMs for the latency model's server, the rest for the other);
               the MPS control daemon is started for the run in a directory of its own and quit before
               the bench returns; no device setting is changed

In each layout, for gRPC and HTTP, with host I/O and with CUDA shared memory (perf_analyzer's
--shared-memory cuda): perf_analyzer drives the latency model open loop at a fixed rate (--rate,
constant spacing) for one window of rate x window requests, alone, then again beside the aggressor,
which a second perf_analyzer drives over gRPC at concurrency 4. Each (protocol, I/O) pair is measured
--repeat times, alone and beside alternating, so host drift hits both sides alike.

Note [warm-up and order]: before a layout's measured windows, each (protocol, I/O) runs one window alone
and one beside the aggressor, --warmup seconds each, and neither is measured: the first windows of a
fresh server and machine ran slow (S48's first run: p99 alone 2474 and 2766 us in its first two
windows, 696 and 813 in the same windows of the next run), and an alone window that is always first
would carry that into every ratio. For the same reason the order turns over from pair to pair: alone
then beside in even pairs (0, 2, ...), beside then alone in odd ones.

Note [the control]: with --control each pair ends with a third window, alone again (tag "_control"),
and the summary gives its p99 / the first alone window's, at the client and at the server: two windows
of the same configuration, the aggressor off in both. It says how far a ratio moves with no aggressor at
all. S49 saw the same row's server p99 alone read 297 us in one run and 424 us in the next; a goal of
1.05 on one pair means little unless the control sits well inside it.

Note [the host's idle states]: the server's queue p99 (its dispatch part: an instance free, the
instance thread woken) ran 130 to 210 us against a mean near 30 in S53's runs, alone as beside, and the
p99s of two windows alone lay up to 1.9x apart: the host's noise, larger than the 5 % the server goal
allows. A thread woken on a core in a deep idle state waits for the core's exit latency. With
--host-idle-latency-us N the bench holds a PM QoS request for the whole run (it writes N to
/dev/cpu_dma_latency and keeps the file open: the kernel keeps every core out of idle states whose exit
latency is above N for as long as the file is open, and drops the request when it closes, at exit or
kill), as a latency-tuned host does (tuned's latency-performance profile). It changes the host for both
sides alike, alone and beside; nothing of the GPU. The summary says whether it was held, and lists the
host's idle states with their exit latencies.

Note [the host while it measures]: in S52's and S56's first runs perf_analyzer fell behind the rate in
window after window, alone as well as beside and in every layout (S56: 55 of 78 windows; the window run
once more fell behind again in 25 of 30), and the later runs on the same machine hardly at all, with
nothing of the GPU changed: something on the host took the load generators' time, and the runs did not
say what. So each layout starts with a look at the host (before its servers start: a process left by
an earlier test or bench shows here), and so does each window perf_analyzer fell behind in (the first
four a layout, right after it): over HOST_LOOK_S, the busiest processes by CPU time (/proc/<pid>/stat,
percent of one core), how busy each of the load generators' cores was (/proc/stat) and the load
average. They are printed, kept in the JSON (host_before, host_after_delayed) and listed by
perf_runs.py per run and layout.

Note [cores of the latency model's own]: in every run so far the server's p99 moved in the queue,
not in compute, and the queue's part with an instance free (the instance thread woken for the
request) read a p99 of 130 to 240 us against a mean near 30, alone as beside (S53 to S56). That
thread shares the server's cores with every other thread of the server: the frontends', and in the
one-server layouts the aggressor's instance. With --latency-cores N (with --client-cores) the last N
of the server's cores become the latency model's instance threads' own: Triton's host policy
(tritonserver --host-policy=latency,cpu-cores=<first>-<last>, and host_policy: "latency" in the
latency model's instance_group) sets the affinity of the instance's thread and of the threads it
starts, and every server process is started on the other server cores only, so nothing else of the
server runs there. The same in every layout, alone as beside. Triton takes one range of cores, so
the N must be consecutive.

Note [the cores kept awake]: the hosts lent to this work are virtual machines whose guests have no CPU
idle driver (/sys/devices/system/cpu/cpu0/cpuidle is absent), so an idle core halts and the hypervisor
takes its virtual CPU away; a thread woken there waits until it is run again (the backend's Note [cores
kept awake]: one thread waking another every 500 us read p99 191 to 214 us on an idle core, 12 us on a
core kept awake, S59; trtet_triton_wake_bench, which scripts/gpu-triton runs before the perf runs). With --keep-cores-awake every server is started with the backend setting
keep-cores-awake naming the server's cores (with --latency-cores, those too), and, with --client-cores,
each of perf_analyzer's cores gets a spinner of the bench's own at SCHED_IDLE: nothing that wants a core
waits for it, and no core of the run halts. The same for both sides of every row, alone and beside. The
cores then read fully busy in the looks at the host (Note [the host while it measures]); steal is read
as before. The summary's host line says whether the cores were kept awake.

Per window, for the latency model: p50, p90, p95 and p99 at the client and the throughput (perf_analyzer's
-f CSV, which stops at p99), the client's p99.9 (Note [the client's p99.9]), the means of where a request's time goes (client send, network + server send/receive,
server queue, compute input, compute infer, compute output, client receive: the CSV's columns), and
the server's own p50, p99 and p99.9 of queue + compute per request (Triton's request traces,
TIMESTAMPS level, for the latency model only: QUEUE_START to COMPUTE_END), and of the queue's two
parts, behind an earlier request and dispatch (Note [where the queue goes]). Beside the aggressor also
its calls/s (the server's success count over the window). Per layout: device memory (nvidia-smi), the
values checked through the server (host I/O; CUDA shared memory where cupy is installed) before and
after the load, and (one-server layouts) the SMs each engine ran on (the SM probe).

Note [the client's p99.9]: perf_analyzer 2.51's CSV has no percentile above p99, but its
--profile-export-file holds each request's send time and the time its answer came back. The measured
windows ask for it and take the client's p99.9 from those pairs, by rank as perf_analyzer takes its
percentiles (nearest_rank; their p50 to p99 match the CSV's to
the microsecond); the file is deleted once read. It also holds every input and output value, so the
inputs are zeros (--input-data zero: the engine's time does not depend on them, and a zero is 4
characters of JSON where a random float is about 25): about 12 KB a request of the latency model.

Ratios beside / alone per pair: the client's p99, the server's p99 of queue + compute, and the
server's mean of queue + compute; and per row its readings for the goals, client and server: one p99
over every request of the row's beside windows / one over every request of its alone windows (Note
[one p99 per side]). The summary is printed last; --json keeps every window. Exit status
1 when a check fails: a wrong value, perf_analyzer failing, an engine off its partition's SMs, or
(with --bound) a partitioned client p99 ratio above the bound.
"""

import argparse
import atexit
import csv
import heapq
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

import harness

LAT_SMS = 32
AGGRESSOR_CONCURRENCY = 4
SHAPE = [1, 1024]
PROTOCOLS = ("grpc", "http")
IOS = ("host", "cuda")
MPS_BIN = "/usr/local/nvidia/bin"


def perf_analyzer_command(extra_env=None):
    """The perf_analyzer binary and the environment it runs in (TRTET_PERF_ANALYZER, its libraries in
    ../lib beside it: scripts/install-triton's layout), with `extra_env` (under MPS: the daemon's
    directories, so that its CUDA shared memory is made by an MPS client like the servers)."""
    binary = harness.env_path("TRTET_PERF_ANALYZER")
    env = dict(os.environ, **(extra_env or {}))
    lib = os.path.join(os.path.dirname(os.path.dirname(binary)), "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.pop("LD_PRELOAD", None)
    return binary, env


def percentile(values, q):
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


def nearest_rank(values, q):
    """perf_analyzer's percentile, the value of rank ceil(q/100 x n) (numpy's inverted_cdf): the client's
    percentiles from its export are taken as its CSV's are, so that the export's p99 is the CSV's own.
    percentile()'s linear interpolation read 14.6 us above the CSV's p99 in a window of 500 whose tail
    had a gap of about 1.5 ms at that rank (a CI run of the p99.9 test)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q, method="inverted_cdf")) if len(values) else float("nan")


MAX_EXPORT_BYTES = 1 << 30  # a window's profile export read at most (4,000 requests take about 48 MB)


def export_latencies_us(path, sends=None):
    """(each answered request's latency in us, the requests never answered, the span in ns from the
    first answered request's send to the last answer) from perf_analyzer's --profile-export-file (Note
    [the client's p99.9]); with a list `sends`, every request's send time (ns) is appended to it. Raises
    ValueError where the file is missing, empty, too large or holds no request."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise ValueError(f"no profile export: {e}") from None
    if size == 0:
        raise ValueError("the profile export is empty")
    if size > MAX_EXPORT_BYTES:
        raise ValueError(f"the profile export is {size} bytes, above {MAX_EXPORT_BYTES}")
    with open(path, errors="replace") as f:
        text = f.read()
    latencies, unanswered, sent = [], 0, None
    first_sent = last_answer = None
    # Each request: "timestamp":<ns sent>, then "response_timestamps":[<ns answered>, ...] ([] if none).
    for m in re.finditer(r'"timestamp":(\d+)|"response_timestamps":\[(\d*)', text):
        if m.group(1) is not None:
            unanswered += sent is not None  # the one before had no response_timestamps
            sent = int(m.group(1))
            if sends is not None:
                sends.append(sent)
        elif sent is not None:
            if m.group(2):
                answered = int(m.group(2))
                latencies.append((answered - sent) / 1e3)
                first_sent = sent if first_sent is None else min(first_sent, sent)
                last_answer = answered if last_answer is None else max(last_answer, answered)
            else:
                unanswered += 1
            sent = None
    unanswered += sent is not None
    if not latencies and not unanswered:
        raise ValueError("the profile export holds no request")
    return latencies, unanswered, (last_answer - first_sent if latencies else 0)


# Note [late at the client or on the way]
# ---------------------------------------
# perf_analyzer's constant distribution sends request i at its start + i / rate. Where it falls behind
# (S57: in most rows of all three runs, with its cores at most 14 % busy), the requests it owed go out
# late and together, and the server's queue behind them is the client's doing, not the GPU's. Each
# window says how late its requests were against that even schedule, at two places: when perf_analyzer
# sent them (its export's send times) and when the server's frontend received them (the traces:
# GRPC_WAITREAD_END or HTTP_RECV_START, else REQUEST_START). A request's lateness is its time minus
# i / rate, less the least of those over the window, so the window's earliest request relative to the
# schedule is 0 late. Late when sent: the load generator. On time when sent and late when received:
# the network, the frontend or the host between them. Neither: the queue is the server's own.


def lateness_us(times_ns, rate):
    """(p99, max) in µs of how late each of a window's requests came against an even schedule of `rate`
    a second (Note [late at the client or on the way]); None for fewer than two requests."""
    times = sorted(times_ns)
    if len(times) < 2 or rate <= 0:
        return None
    step = 1e9 / rate
    ahead = [t - i * step for i, t in enumerate(times)]
    first = min(ahead)
    late = [(a - first) / 1e3 for a in ahead]
    return nearest_rank(late, 99), max(late)


def arrivals_ns(traces, model, start_ns, end_ns):
    """When the server's frontend received each of `model`'s requests that started in [start_ns,
    end_ns] (Note [late at the client or on the way])."""
    out = []
    for t in traces.values():
        if t.get("model") != model or not start_ns <= t.get("REQUEST_START", -1) <= end_ns:
            continue
        out.append(t.get("GRPC_WAITREAD_END", t.get("HTTP_RECV_START", t["REQUEST_START"])))
    return out


def add_lateness(window, side, times_ns, rate):
    """window[f"{side}_late_p99_us"] and [f"{side}_late_max_us"] from lateness_us, where there are any."""
    late = lateness_us(times_ns, rate)
    if late is not None:
        window[f"{side}_late_p99_us"], window[f"{side}_late_max_us"] = late


# Note [calls per second]
# -----------------------
# perf_analyzer's "Inferences/Second" for a window of --request-count requests divides them by a span
# of its own that at times takes in a second more: S49's 2 s windows of 4,000 requests at 2,000/s, their
# p99s under 1.1 ms, read 2,000 in one row and 1,333 (4,000 / 3 s) in the next, perf_analyzer's process
# taking 2.1 s in the first and 3.0 s in the second (run 1, partitioned, gRPC host I/O). The latency
# model's calls/s in the tables is therefore the window's answered requests over the span from the
# first one's send to the last answer, from the profile export ("served_per_s"); perf_analyzer's
# figure stays in the JSON as "throughput", and is shown where a window has no export.


def latency_calls_per_s(med, side):
    """The latency model's calls/s on one side of a row (med: the row's median over its pairs)."""
    served = med(side, "served_per_s")
    return served if served == served else med(side, "throughput")


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise RuntimeError(f"perf_analyzer wrote no rows to {path}")
    return rows[0]


def trace_args(path):
    """Server arguments for Triton's request traces into `path` (.0, .1, ...), off until enable_trace."""
    return ["--trace-config", f"triton,file={path}", "--trace-config", "level=OFF"]


TRACE_BATCH = 500


def enable_trace(server, model, rate=1, log_frequency=TRACE_BATCH):
    """One request of `model` in `rate` traced with its timestamps (TIMESTAMPS), written to a file of its
    own every `log_frequency` traces (what the server still holds as it exits is written only on a clean
    exit, so the bench sends TRACE_BATCH more requests after its last window instead)."""
    server.client.update_trace_settings(model_name=model, settings={
        "trace_level": ["TIMESTAMPS"], "trace_rate": str(rate), "trace_count": "-1",
        "log_frequency": str(log_frequency)})


def read_traces(path):
    """{trace id: {timestamp name: ns, "model": name}} from every file the server wrote for `path`
    (read after the server has stopped: it writes what it holds as it exits). Triton's trace
    timestamps are the host's monotonic clock, as time.monotonic_ns() reads it."""
    traces = {}
    directory, base = os.path.split(path)
    for name in sorted(os.listdir(directory)):
        if name != base and not (name.startswith(base + ".") and name[len(base) + 1:].isdigit()):
            continue
        with open(os.path.join(directory, name)) as f:
            text = f.read().strip()
        if not text:
            continue
        for entry in json.loads(text):
            trace = traces.setdefault(entry.get("id"), {})
            if "model_name" in entry:
                trace["model"] = entry["model_name"]
            for stamp in entry.get("timestamps", []):
                trace[stamp["name"]] = stamp["ns"]
    return traces


# Note [where the queue goes]
# ---------------------------
# A request's queue time (QUEUE_START to COMPUTE_START in Triton's traces) has two parts. While an
# instance is still computing an earlier request (up to that request's COMPUTE_END, the end the
# backend reports, after its send), the request waits behind it ("behind"). The rest ("dispatch") is
# time with an instance free: Triton's scheduler handing the request over, the instance's thread
# waking, and the earlier request's release phase, which follows its reported end. Requests are taken
# in the order they were queued; with N instances one is free once fewer than N earlier requests are
# still computing (the N-th latest COMPUTE_END so far). S49's traces put the whole of the server's
# p99 movement beside the aggressor in the queue (partitioned, both runs: the compute p99 alone ->
# beside moved by 0.91 to 1.03, e.g. 210 -> 200 us, the queue p99 by 0.87 to 1.71, e.g. 131 -> 224 us);
# this split says which of the two parts it is.
BEHIND = "_behind_ns"  # set on a trace by mark_queue_behind


def mark_queue_behind(traces, model, instances=1):
    """Each of `model`'s traces gets its queue time spent behind an earlier request (BEHIND, ns; Note
    [where the queue goes]), for `instances` instances serving in queue order."""
    requests = sorted((t for t in traces.values() if t.get("model") == model
                       and all(k in t for k in ("QUEUE_START", "COMPUTE_START", "COMPUTE_END"))),
                      key=lambda t: (t["QUEUE_START"], t["COMPUTE_START"]))
    ends = []  # the `instances` latest compute ends so far, a min-heap: ends[0] is when one is free
    for t in requests:
        free = ends[0] if len(ends) == instances else 0
        queue = max(t["COMPUTE_START"] - t["QUEUE_START"], 0)
        t[BEHIND] = min(max(free - t["QUEUE_START"], 0), queue)
        if len(ends) < instances:
            heapq.heappush(ends, t["COMPUTE_END"])
        elif t["COMPUTE_END"] > ends[0]:
            heapq.heapreplace(ends, t["COMPUTE_END"])


def server_times_us(traces, model, start_ns, end_ns):
    """Per request of `model` that started in [start_ns, end_ns]: queue + compute (QUEUE_START to
    COMPUTE_END), queue, compute (COMPUTE_START to COMPUTE_END), the server's whole request
    (REQUEST_START to REQUEST_END), the frontend's span, and the queue's two parts, behind an earlier
    request and dispatch (nan unless mark_queue_behind ran: Note [where the queue goes]), µs."""
    rows = []
    for t in traces.values():
        if t.get("model") != model or not start_ns <= t.get("REQUEST_START", -1) <= end_ns:
            continue
        if all(k in t for k in ("QUEUE_START", "COMPUTE_START", "COMPUTE_END", "REQUEST_END")):
            # The frontend's span: the request read (gRPC) or its receipt started (HTTP) to its answer sent.
            start = t.get("GRPC_WAITREAD_END", t.get("HTTP_RECV_START"))
            end = t.get("GRPC_SEND_END", t.get("HTTP_SEND_END"))
            frontend = (end - start) / 1e3 if start is not None and end is not None and end >= start else float("nan")
            queue = (t["COMPUTE_START"] - t["QUEUE_START"]) / 1e3
            behind = t[BEHIND] / 1e3 if BEHIND in t else float("nan")
            rows.append(((t["COMPUTE_END"] - t["QUEUE_START"]) / 1e3, queue,
                         (t["COMPUTE_END"] - t["COMPUTE_START"]) / 1e3, (t["REQUEST_END"] - t["REQUEST_START"]) / 1e3,
                         frontend, behind, queue - behind))
    return rows


SERVER_FIGURES = ("server", "queue", "compute", "request", "frontend", "behind", "dispatch")  # server_times_us's columns


def add_server_percentiles(window, rows):
    if not rows:
        return
    for i, key in enumerate(SERVER_FIGURES):
        values = [r[i] for r in rows if r[i] == r[i]]
        if not values:
            continue
        window[f"{key}_p50_us"] = percentile(values, 50)
        window[f"{key}_p99_us"] = percentile(values, 99)
        window[f"{key}_p999_us"] = percentile(values, 99.9)
    window["traced"] = len(rows)
    behind = [r[5] for r in rows if r[5] == r[5]]
    if behind:
        window["queued_behind"] = sum(1 for b in behind if b > 0)  # requests that waited behind another


def success_count(server, model):
    stats = server.client.get_inference_statistics(model)["model_stats"][0]["inference_stats"]
    return int(stats["success"]["count"])


def request_counts(server, model):
    """{"success", "fail", "pending"} for `model` as the server counts them now (pending: received and
    not yet executed, from /metrics); a count that cannot be read is None."""
    counts = {"success": None, "fail": None, "pending": None}
    try:
        stats = server.client.get_inference_statistics(model)["model_stats"][0]["inference_stats"]
        counts["success"], counts["fail"] = int(stats["success"]["count"]), int(stats["fail"]["count"])
    except Exception:  # a server that does not answer is what the caller is diagnosing
        pass
    try:
        pending = server.metric("nv_inference_pending_request_count", model)
        counts["pending"] = None if pending is None else int(pending)
    except Exception:
        pass
    return counts


def count_delta(before, after, key):
    """What the server's count `key` (request_counts) grew by over a window; None where either side
    could not be read."""
    if before.get(key) is None or after.get(key) is None:
        return None
    return after[key] - before[key]


# server_ready's answer, in words.
READINESS = {True: "ready", False: "NOT ready", None: "not answering"}


def stall_verdict(tag, limit_s, requests, before, after, ready, said):
    """The message for a perf_analyzer window that did not finish in limit_s: which side held the
    requests. before/after are request_counts around the window; ready is the server's readiness
    after it (None when it did not answer); said is what perf_analyzer printed before it was stopped."""
    done, failed = count_delta(before, after, "success"), count_delta(before, after, "fail") or 0
    if done is None:
        where = "the server did not answer its statistics, so which side stalled is unknown"
    elif done + failed >= requests:
        where = (f"the server completed all {requests} requests ({done} succeeded, {failed} failed): "
                 "perf_analyzer stalled after the server answered")
    else:
        where = (f"the server completed {done + failed} of the {requests} requests ({done} succeeded, "
                 f"{failed} failed), {after.get('pending')} pending at the end: the rest were either "
                 "never sent or never answered")
    text = (said or "").strip()
    return (f"perf_analyzer ({tag}) did not finish in {limit_s:.0f} s; {where}; the server is {READINESS[ready]}"
            + (f"; perf_analyzer had printed: {text[-1500:]}" if text else "; perf_analyzer had printed nothing"))


def small_copies_text():
    """How the servers' delegates move small host transfers, from the environment they inherit
    (TRTET_SMALL_COPIES, docs/OPTIONS.md; Note [small copies] in src/staging/small_copy.cu): recorded
    with each run's host settings, since it decides what a host-I/O row's copies wait behind."""
    value = os.environ.get("TRTET_SMALL_COPIES")
    if value is None:
        return "chunks of at most 64 KiB by the copy kernel (TRTET_SMALL_COPIES unset)"
    return f"TRTET_SMALL_COPIES={value[:32]!r}"


def server_ready(server):
    try:
        return bool(server.client.is_server_ready())
    except Exception:
        return None


class AggressorLoad:
    """perf_analyzer on the aggressor at concurrency 4 over gRPC, running until stopped."""

    def __init__(self, server, work, extra_env=None):
        self.server = server
        binary, env = perf_analyzer_command(extra_env)
        self.log_path = os.path.join(work, "aggressor_pa.log")
        self.log = open(self.log_path, "w")
        command = [binary, "-m", "aggressor", "-u", f"127.0.0.1:{server.grpc_port}", "-i", "grpc",
                   "--concurrency-range", str(AGGRESSOR_CONCURRENCY), "--request-count", "100000000",
                   "--shape", f"input_0:{','.join(map(str, SHAPE))}", "--shape", f"input_1:{','.join(map(str, SHAPE))}"]
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        start = success_count(server, "aggressor")
        deadline = time.monotonic() + 30
        while success_count(server, "aggressor") < start + 2 * AGGRESSOR_CONCURRENCY:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the aggressor's perf_analyzer did not get going:\n" + self.tail())
            time.sleep(0.05)

    def tail(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-3000:]

    # Note [stopping the aggressor]
    # ------------------------------
    # perf_analyzer 2.51 answers SIGINT with "Waiting for in-flight inferences to complete." and then
    # does not exit: on the H200 (S50) every stop waited out the 10 s this took before SIGKILL, about 240 s of
    # a whole run (24 windows beside the aggressor). Its report is not needed (the calls/s come from
    # the server's count), and the in-flight calls (4 of about 1 ms) are done in far less than STOP_GRACE_S:
    # SIGINT, a short grace, then SIGKILL.
    STOP_GRACE_S = 1.0

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=self.STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()


PHASES = ("response_new", "inputs", "outputs", "execute", "stream_wait", "late_outputs", "send", "release", "method")
# The timed requests' figures (one in gpu_time_every): the engines' and the copies' GPU time, the delegate's host time.
TIMED = ("trtet_engine_gpu_duration_us", "trtet_staging_gpu_duration_us", "trtet_delegate_host_duration_us")


def phase_sums(server, model="latency"):
    """The backend's request phases on /metrics (Note [request phases] in triton/src/gpu_time.h):
    ({phase: cumulative us}, requests); None where /metrics cannot be read."""
    try:
        text = server.metrics_text()  # one page for every phase: the sums as of one moment
    except OSError:
        return None
    requests = server.metric("trtet_request_phase_requests", model, text=text)
    # Before the first flush (32 requests) the series are not there yet: zero so far (a server
    # without the backend's metrics stays at zero, and phase_means gives nothing). The timed
    # requests' sums are kept beside the phases under their family names, with their own count.
    sums = {p: server.metric("trtet_request_phase_duration_us", model, text=text, phase=p) or 0.0 for p in PHASES}
    sums.update({f: server.metric(f, model, text=text) or 0.0 for f in TIMED})
    sums["timed_requests"] = server.metric("trtet_engine_gpu_requests", model, text=text) or 0.0
    return sums, requests or 0


def phase_means(before, after):
    """Mean us per request of each phase between two phase_sums; {} when either is missing."""
    if before is None or after is None or after[1] <= before[1]:
        return {}
    n = after[1] - before[1]
    means = {p: (after[0][p] - before[0][p]) / n for p in PHASES}
    timed = after[0]["timed_requests"] - before[0]["timed_requests"]
    if timed > 0:
        means.update({f: (after[0][f] - before[0][f]) / timed for f in TIMED})
    return means


# Note [one sending thread]
# -------------------------
# perf_analyzer spreads a request rate over --max-threads threads (4 unless told), round robin. Every
# window it left unfinished with the server clean (SERVING.md, "A load generator that stops") had
# exactly a quarter of its requests never sent: one thread of four that stopped. With one thread the
# same schedule comes from one sender; against the real server on the CPU (stall_check.py --rounds 100
# --threads 4,1: 200 windows each), four threads stalled 4 windows (3 in an earlier run) and one thread none. One thread sends 2,000 requests/s
# asynchronously with time to spare; where it could not keep up perf_analyzer says so, and the
# bench reports the window as delayed. --client-threads 4 gives perf_analyzer's default back.
CLIENT_THREADS = 1
# The load generators' cores (--client-cores), for Note [the host while it measures]; None: every core.
CLIENT_CORES = None

# Beyond twice its window and this, a perf_analyzer window has stalled: on the H200 (S50) a 2 s window took
# 2.3 to 5.0 s from perf_analyzer's start to its exit; a stall held the bench 34 s with 30 here.
STALL_SLACK_S = 10.0


class WindowStalled(RuntimeError):
    """A perf_analyzer window that did not finish; the message says which side held the requests.
    client_side: the server failed none of the window's requests, holds none pending and is ready, so
    what stopped was the load generator (perf_analyzer's asynchronous gRPC client is known to stop
    sending and wait forever: triton-inference-server/server issue 2686). start_ns/end_ns: the span
    of the window, for the server's own traces of it."""

    def __init__(self, message, client_side=False, start_ns=None, end_ns=None, what="stalled"):
        super().__init__(message)
        self.client_side, self.start_ns, self.end_ns = client_side, start_ns, end_ns
        self.what = what  # "stalled", or "failed": Note [a window perf_analyzer failed in]


def stalled_at_the_client(before, after, ready):
    """True when a stalled window's server side is clean: its statistics answered, no request of the
    window failed, none is pending at the end and the server is ready (before/after: request_counts)."""
    if ready is not True or after.get("pending") != 0:
        return False
    if any(side.get(key) is None for side in (before, after) for key in ("success", "fail")):
        return False
    return after["fail"] == before["fail"]


# Note [a window perf_analyzer failed in]
# --------------------------------------
# S57's runs (H100) lost two layouts, one a run, to one window each: perf_analyzer over HTTP ended
# with "Failed to retrieve results from inference request. Thread [0] had error: failed to parse the
# request JSON buffer: The document is empty. at 0". That message is the HTTP client library's, on a
# response whose body it got empty (tritonclient's InferResultHttp parses every response's JSON);
# the server answers a request it refuses with a JSON error, never an empty body. So the request was
# lost in the client or on the way, not refused. Such a window runs once more, as a stall does, where
# the server's side is clean by the same test (stalled_at_the_client: it answered, failed no request
# of the window, holds none pending, is ready) and it served part of the window, so perf_analyzer got
# as far as sending (a refused argument sends nothing, and fails as before). The first failure is
# recorded with the stalls (load_generator_stalls) and printed; a second one fails the layout.


# Note [an export short of its window]
# -----------------------------------
# In all 144 windows of S64's three runs the profile export held every request of its window, each
# answered. Once in CI (the p99.9 test on the Python backend, a 2-core machine) perf_analyzer 2.51
# exited 0 with a CSV of the whole window (249.9/s: its 500 requests over its 2 s span) and an export
# that held 7 answered requests. Such an export would give the window a p99.9 and calls/s of another
# set of requests than its p99's, so it is not read: where the server served the whole window and
# is clean (served_clean), the load generator is put down for it, as for a stall, and
# measure_once_more runs the window again once; otherwise the window fails. The message says what
# the export held, its size and what the server served, so that a next one tells more.


def served_clean(count, before, after, ready):
    """True when the server served all `count` requests of a window, failed none, holds none and is
    ready (stalled_at_the_client with the whole window served; before/after: request_counts)."""
    return stalled_at_the_client(before, after, ready) and after["success"] - before["success"] == count


def short_export_verdict(tag, count, answered, unanswered, size, window, before, after, ready):
    """The message for a window whose profile export does not hold each of its `count` requests answered."""
    return (f"perf_analyzer ({tag})'s profile export holds {answered} answered and {unanswered} unanswered of "
            f"the window's {count} requests ({size} bytes; its CSV read {window['throughput']:g} calls/s, "
            f"p99 {window['p99_us']:g} us); {server_side(before, after, ready)}")


def failed_at_the_client(before, after, ready):
    """True when a window perf_analyzer failed in may be put down to the client: the server is clean
    (stalled_at_the_client) and served part of the window (before/after: request_counts)."""
    return stalled_at_the_client(before, after, ready) and after["success"] > before["success"]


def server_side(before, after, ready):
    """The server's side of a window perf_analyzer failed in and that was not put down to the client
    (failed_at_the_client): what it served and failed of the window, what it holds, whether it is
    ready (before/after: request_counts; ready: server_ready), so the next such failure says which
    test kept it from running again."""
    def known(value):
        return "?" if value is None else value

    return (f"the server served {known(count_delta(before, after, 'success'))} of the window's requests and "
            f"failed {known(count_delta(before, after, 'fail'))}, holds {known(after.get('pending'))} pending, "
            f"is {READINESS[ready]}")


def failure_verdict(tag, returncode, before, after, said):
    """The message for a window perf_analyzer failed in with the server clean."""
    lines = [line.strip() for line in said.splitlines() if "error" in line.lower() or "failed" in line.lower()]
    return (f"perf_analyzer ({tag}) failed ({returncode}) after the server had served "
            f"{after['success'] - before['success']} of the window's requests, failed none and held none, "
            f"ready: {' / '.join(lines)[-600:] or said.strip()[-600:]}")


def window_command(binary, port, protocol, io, rate, count, csv_path, threads):
    """perf_analyzer for one window on the latency model: open loop at `rate`, asynchronous calls,
    `count` requests, `threads` sending threads (Note [one sending thread]), its CSV at csv_path."""
    return [binary, "-m", "latency", "-u", f"127.0.0.1:{port}", "-i", protocol,
            "--async", "--request-rate-range", str(rate), "--request-distribution", "constant",
            "--request-count", str(count),
            "--shape", f"input_0:{','.join(map(str, SHAPE))}", "--shape", f"input_1:{','.join(map(str, SHAPE))}",
            "--input-data", "zero", "--percentile", "99", "-f", csv_path, "--max-threads", str(threads),
            "--shared-memory", "cuda" if io == "cuda" else "none", "--output-shared-memory-size", str(4 * SHAPE[1])]


def measure(server, protocol, io, rate, window_s, work, tag, extra_env=None, export=False):
    """One perf_analyzer window on the latency model: open loop at `rate` (asynchronous calls, so a
    slow response delays no later send), rate x window requests. With `export`, the client's p99.9
    from perf_analyzer's profile export too (Note [the client's p99.9])."""
    binary, env = perf_analyzer_command(extra_env)
    port = server.grpc_port if protocol == "grpc" else server.http_port
    # perf_analyzer 2.51 refuses a request count below the rate ("request-count can not be less than
    # request-rate") and prints its usage.
    count = max(TRACE_BATCH, int(rate), int(rate * window_s))
    csv_path = os.path.join(work, f"{tag}.csv")
    command = window_command(binary, port, protocol, io, rate, count, csv_path, CLIENT_THREADS)
    export_path = os.path.join(work, f"{tag}.export.json")
    if export:
        command += ["--profile-export-file", export_path]
    try:
        phases_before = phase_sums(server)
        counts_before = request_counts(server, "latency")
        limit_s = window_s * 2 + STALL_SLACK_S  # a window takes window_s, and perf_analyzer's start
        cores_before = core_times()  # Note [time the hypervisor took]
        t0 = time.monotonic_ns()
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=limit_s)
        except subprocess.TimeoutExpired as e:  # (run() has killed it)
            said = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            counts_after, ready = request_counts(server, "latency"), server_ready(server)
            raise WindowStalled(stall_verdict(tag, limit_s, count, counts_before, counts_after, ready, said),
                                client_side=stalled_at_the_client(counts_before, counts_after, ready),
                                start_ns=t0, end_ns=time.monotonic_ns()) from None
        t1 = time.monotonic_ns()
        steal = window_steal(cores_before, core_times())
        phases = phase_means(phases_before, phase_sums(server))
        if done.returncode != 0 or not os.path.exists(csv_path):
            said = done.stdout + done.stderr
            if "Usage:" in said:  # a refused argument: its error comes before the usage text
                said = said[:said.index("Usage:")]
            counts_after, ready = request_counts(server, "latency"), server_ready(server)
            if failed_at_the_client(counts_before, counts_after, ready):  # Note [a window perf_analyzer failed in]
                raise WindowStalled(failure_verdict(tag, done.returncode, counts_before, counts_after, said),
                                    client_side=True, start_ns=t0, end_ns=t1, what="failed")
            raise RuntimeError(f"perf_analyzer ({tag}) failed ({done.returncode}); "
                               f"{server_side(counts_before, counts_after, ready)}:\n{said[-3000:]}")
        row = read_csv(csv_path)
        delayed = [line.strip() for line in done.stdout.splitlines() if "not able to keep up" in line]

        def server_us(column):
            return float(row.get(column, "nan") or "nan")

        out = {"requests": count, "start_ns": t0, "end_ns": t1, "throughput": float(row["Inferences/Second"]),
               "p50_us": server_us("p50 latency"), "p90_us": server_us("p90 latency"), "p95_us": server_us("p95 latency"),
               "p99_us": server_us("p99 latency"), "delayed": delayed, "client_send_us": server_us("Client Send"),
               "network_us": server_us("Network+Server Send/Recv"), "client_recv_us": server_us("Client Recv"),
               "queue_us": server_us("Server Queue"), "compute_input_us": server_us("Server Compute Input"),
               "compute_infer_us": server_us("Server Compute Infer"), "compute_output_us": server_us("Server Compute Output")}
        out["server_us"] = out["queue_us"] + out["compute_input_us"] + out["compute_infer_us"] + out["compute_output_us"]
        out["compute_us"] = out["compute_input_us"] + out["compute_infer_us"] + out["compute_output_us"]
        out["phases_us"] = phases  # the backend's own split of compute input, infer and output (and after)
        out.update(steal)  # Note [time the hypervisor took]
        if export:  # Note [the client's p99.9]
            try:
                sends = []
                latencies, unanswered, span_ns = export_latencies_us(export_path, sends)
                if len(latencies) != count or unanswered:  # Note [an export short of its window]
                    size = os.path.getsize(export_path)
                    counts_after, ready = request_counts(server, "latency"), server_ready(server)
                    raise WindowStalled(short_export_verdict(tag, count, len(latencies), unanswered, size, out,
                                                             counts_before, counts_after, ready),
                                        client_side=served_clean(count, counts_before, counts_after, ready),
                                        start_ns=t0, end_ns=t1, what="exported short")
                add_lateness(out, "sent", sends, rate)  # Note [late at the client or on the way]
                out.update({"p999_us": nearest_rank(latencies, 99.9), "export_p99_us": nearest_rank(latencies, 99),
                            "exported": len(latencies), "unanswered": unanswered})
                if span_ns > 0:  # Note [calls per second]
                    out["served_per_s"] = len(latencies) * 1e9 / span_ns
                out[CLIENT_TIMES] = latencies  # for the pooled p99 (Note [one p99 per side]); not in the JSON
            except ValueError as e:
                out["export_error"] = str(e)[:300]
        return out
    finally:  # the export is large and read once: gone however the window ended
        if os.path.exists(export_path):
            os.remove(export_path)


# Note [a window the load generator fell behind in]
# ------------------------------------------------
# perf_analyzer says when it could not keep to its schedule ("not able to keep up"): the requests it
# owed then went out late and together, so the window measured a burst, not the open-loop rate the
# reading is about, and the server's queue behind it. In S55's three runs (H100) every partitioned
# row with such a window read far from 1 on one side or the other (0.23, 0.72, 0.66, 2.18 at the
# client), and its windows alone lay up to 13x apart. Decided in S55, before the next runs: such a
# window runs once more, alone or beside alike, and the second is kept whatever it shows (delayed or
# not); the summary counts the windows run again per row. `--keep-delayed` keeps the first instead.


# Note [a window the hypervisor took from]
# ----------------------------------------
# S58's three runs (H100) were the first with each window's steal (Note [time the hypervisor took]).
# Over the 96 windows of the partitioned and MPS layouts, the server's p99 followed the steal
# (correlation 0.89): in the 74 windows where the hypervisor took less than 0.2 % of all cores' time
# it read at most 558 us, and none of them 600 or more; of the 22 at 0.2 % or above, 10 read 603 to
# 3,312 us, and all 8 at 0.5 % or above read over 600 at the server and over 1,500 at the client. The
# ratio of such a pair measures the hypervisor, on one side or the other. Decided in S58, before the
# next runs: a window in which the hypervisor took STEAL_RERUN_PERCENT or more of all cores' time runs
# once more, alone or beside alike, and the second is kept whatever it shows, as a window perf_analyzer
# fell behind in is (the rule above; a window that fell behind runs again for that, once). The second
# carries the first's steal as "ran_again_stolen", the summary counts them per row, and perf_runs.py
# lists them. `--rerun-steal-percent 0` keeps every window instead.
STEAL_RERUN_PERCENT = 0.2


def measure_once_more(on_stall, server, protocol, io, rate, window_s, work, tag, extra_env=None, export=False,
                      on_delayed=None, on_stolen=None, steal_limit=STEAL_RERUN_PERCENT):
    """measure(), run again once where the window stalled or failed at the load generator, or its profile
    export came short of it, with the server clean (WindowStalled.client_side; Note [an export short of
    its window]), after on_stall(tag, the WindowStalled) has recorded it. Any other
    stall, or a second one, is raised. With on_delayed, a window perf_analyzer fell behind in runs again
    once too, after on_delayed(tag, the window) has recorded it, and the second is returned with
    "ran_again": the first's delays (Note [a window the load generator fell behind in]). With on_stolen,
    so does a window the hypervisor took steal_limit % or more of all cores' time from, with
    "ran_again_stolen": the first's steal (Note [a window the hypervisor took from])."""
    try:
        window = measure(server, protocol, io, rate, window_s, work, tag, extra_env, export)
    except WindowStalled as e:
        if not e.client_side:
            raise
        on_stall(tag, e)
        return measure(server, protocol, io, rate, window_s, work, tag + "_again", extra_env, export)
    if on_delayed is not None and window["delayed"]:
        on_delayed(tag, window)
        cause = ("ran_again", window["delayed"])
    elif on_stolen is not None and steal_limit > 0 and window.get("steal_percent", 0.0) >= steal_limit:
        on_stolen(tag, window)
        cause = ("ran_again_stolen", {k: window[k] for k in STEAL_KEYS})
    else:
        return window
    again = measure(server, protocol, io, rate, window_s, work, tag + "_again", extra_env, export)
    again[cause[0]] = cause[1]
    return again


def device_memory_mib():
    """(used MiB on GPU 0, {pid: MiB} of the compute processes nvidia-smi lists)."""
    try:
        used = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=30).stdout.split()
        apps = subprocess.run(["nvidia-smi", "-i", "0", "--query-compute-apps=pid,used_memory",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30).stdout
        per = {}
        for line in apps.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                per[int(parts[0])] = int(parts[1])
        return (int(used[0]) if used else -1), per
    except (OSError, subprocess.SubprocessError, ValueError):
        return -1, {}


def check_values(server, model):
    """A host I/O call through the server, its values checked (the waves engine computes 2x - 0.5y)."""
    import tritonclient.http as httpclient
    rng = np.random.default_rng(3)
    x = rng.standard_normal(SHAPE, dtype=np.float32)
    y = rng.standard_normal(SHAPE, dtype=np.float32)
    inputs = [httpclient.InferInput("input_0", SHAPE, "FP32"), httpclient.InferInput("input_1", SHAPE, "FP32")]
    inputs[0].set_data_from_numpy(x)
    inputs[1].set_data_from_numpy(y)
    outputs = [httpclient.InferRequestedOutput("output_0", binary_data=True)]
    got = server.client.infer(model, inputs, outputs=outputs).as_numpy("output_0")
    np.testing.assert_allclose(got, 2 * x - 0.5 * y, rtol=1e-5, atol=1e-5)


def check_device_values(server, model):
    """The same through CUDA shared memory, where cupy is installed (serving_bench.Io); None without it."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return None
    import serving_bench
    io = serving_bench.Io(server.client, "device", f"check_{model}")
    try:
        io.check(io.call(model))
    finally:
        io.close()
    return True


class MpsUnavailable(Exception):
    pass


class Mps:
    """The MPS control daemon for this run: its pipe and log in a directory of its own."""

    def __init__(self, work):
        self.control = shutil.which("nvidia-cuda-mps-control") or os.path.join(MPS_BIN, "nvidia-cuda-mps-control")
        if not os.access(self.control, os.X_OK):
            raise MpsUnavailable(f"nvidia-cuda-mps-control is not in PATH or {MPS_BIN}: no MPS on this machine")
        self.dir = tempfile.mkdtemp(prefix="trtet-mps-", dir=work)
        self.env = {"CUDA_MPS_PIPE_DIRECTORY": os.path.join(self.dir, "pipe"),
                    "CUDA_MPS_LOG_DIRECTORY": os.path.join(self.dir, "log")}
        for d in self.env.values():
            os.makedirs(d)
        # On the server's cores where the bench split them: the daemon starts the MPS server the servers use.
        started = subprocess.run([*harness.server_pin(), self.control, "-d"], env={**os.environ, **self.env}, capture_output=True, text=True,
                                 timeout=30)
        if started.returncode != 0:
            raise RuntimeError(f"nvidia-cuda-mps-control -d: {started.returncode} {started.stderr.strip()}")
        self.running = True

    def quit(self):
        if not self.running:
            return
        subprocess.run([self.control], input="quit\n", env={**os.environ, **self.env}, capture_output=True, text=True,
                       timeout=60)
        self.running = False
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            alive = subprocess.run(["pgrep", "-f", "nvidia-cuda-mps"], capture_output=True, text=True).stdout.split()
            mine = [p for p in alive if self._ours(p)]
            if not mine:
                return
            time.sleep(0.2)

    def _ours(self, pid):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                return self.env["CUDA_MPS_PIPE_DIRECTORY"].encode() in f.read()
        except OSError:
            return False

    def log(self):
        text = ""
        for name in ("control.log", "server.log"):
            path = os.path.join(self.env["CUDA_MPS_LOG_DIRECTORY"], name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    text += f.read()[-2000:]
        return text


def latency_partitions(instances, plan_gpu):
    """The plan's partitions for the latency model's `instances`: one named 'latency' of LAT_SMS SMs, or
    'latency_<k>' for each of several (the backend gives instance k the partition <name>_<k>), splitting
    LAT_SMS SMs evenly in the GPU's granularity, so that the model's share stays the same."""
    if instances == 1:
        return [("latency", LAT_SMS)]
    step = max(int(plan_gpu.get("granularity", 8)), int(plan_gpu.get("min_partition", 8)))
    each = LAT_SMS // instances // step * step
    if each < step:
        raise ValueError(f"{instances} instances cannot split {LAT_SMS} SMs into partitions of at least {step}")
    return [(f"latency_{k}", each) for k in range(instances)]


def sms_probe(server, sms_file):
    import serving_bench
    return serving_bench.sms_of(server, sms_file, "latency"), serving_bench.sms_of(server, sms_file, "aggressor", calls=5)


# --rate-limiter shared: both models' instances need the one copy of a global resource, so Triton's rate
# limiter (tritonserver --rate-limit=execution_count) runs one execution at a time across the two models
# and, when both wait, gives the latency model RATE_LIMIT_PRIORITY["aggressor"] times the aggressor's
# chances (Triton: an instance of priority 2 gets half the chances of one of priority 1).
RATE_LIMIT_RESOURCE = "gpu"
RATE_LIMIT_PRIORITY = {"latency": 1, "aggressor": 8}
RATE_LIMIT_SERVER_ARGS = ["--rate-limit=execution_count"]


def instance_group_text(count, model, rate_limited=False, host_policy=None):
    """The instance_group of `count` instances on GPU 0, with the rate limiter's shared resource and the
    model's priority when `rate_limited`, and Triton's host policy `host_policy` (Note [cores of the
    latency model's own])."""
    limiter = ""
    if rate_limited:
        limiter = (f' rate_limiter {{ resources [ {{ name: "{RATE_LIMIT_RESOURCE}" global: true count: 1 }} ]'
                   f' priority: {RATE_LIMIT_PRIORITY[model]} }}')
    policy = f' host_policy: "{host_policy}"' if host_policy else ""
    return f'instance_group [ {{ kind: KIND_GPU count: {count} gpus: [ 0 ]{limiter}{policy} }} ]\n'


# Note [cores of the latency model's own]: the policy's name, and the server arguments that give it cores.
LATENCY_POLICY = "latency"
LATENCY_POLICY_ARGS = []
SERVER_AWAKE_ARGS = []  # Note [the cores kept awake]: the servers' --backend-config keep-cores-awake

# A load generator's core kept awake: the spinner lowers itself to SCHED_IDLE before it spins, and dies
# with the bench (PR_SET_PDEATHSIG, SIGKILL), however the bench ends.
AWAKE_SPINNER = ("import ctypes, os, signal\n"
                 "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))\n"
                 "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
                 "while True:\n    pass\n")


def keep_cores_awake(cores):
    """Note [the cores kept awake]: one SCHED_IDLE spinner process pinned to each of `cores`, stopped at
    the bench's exit; returns them."""
    spinners = []
    for core in sorted(cores):
        spinners.append(subprocess.Popen([sys.executable, "-c", AWAKE_SPINNER],
                                         preexec_fn=lambda core=core: os.sched_setaffinity(0, {core})))
    atexit.register(stop_spinners, spinners)
    return spinners


def stop_spinners(spinners):
    for p in spinners:
        if p.poll() is None:
            p.kill()
        p.wait()


def latency_cores_split(server_cores, count):
    """(the cores left to the server processes, the latency model's instance cores, the server argument
    naming them): the last `count` of `server_cores`, which must be consecutive (Triton's cpu-cores is
    one range), and at least one core left."""
    cores = sorted(server_cores)
    if count < 1 or count > len(cores) - 1:
        raise ValueError(f"{count} latency cores of {len(cores)} server cores: it takes 1 to {len(cores) - 1}")
    own = cores[-count:]
    if own[-1] - own[0] != count - 1:
        raise ValueError(f"the latency model's cores {harness.cores_text(own)} are not consecutive: Triton's "
                         f"cpu-cores takes one range")
    return set(cores[:-count]), set(own), f"--host-policy={LATENCY_POLICY},cpu-cores={own[0]}-{own[-1]}"


def run_layout(layout, args, plan_gpu, work):
    repo = tempfile.mkdtemp(prefix=f"repo-{layout}-", dir=work)
    rate_limited = args.rate_limiter == "shared" and layout == "whole"  # (two models on one GPU, one server)
    params = {}
    if layout == "partitioned":
        plan = os.path.join(repo, "plan.json")
        harness.write_plan(plan, latency_partitions(args.instances, plan_gpu), remainder="aggressor", gpu=plan_gpu)
        params = {"plan_file": plan}
    # The latency model's instances (--instances): each its own Module and stream; partitioned, each on a
    # partition of its own (latency_<k>), the same LAT_SMS SMs in all; otherwise all on the whole GPU.
    latency_group = instance_group_text(args.instances, "latency", rate_limited,
                                        LATENCY_POLICY if LATENCY_POLICY_ARGS else None)
    if args.priority != "default":  # Triton's optimization.priority for the latency model (whole GPU: its stream's)
        latency_group += f"optimization {{ priority: PRIORITY_{args.priority.upper()} }}\n"
    harness.make_model(repo, "latency", pte="triton_latency", parameters=dict(params, stream_wait=args.wait,
                                                                                 send_from=args.send_from),
                       extra=latency_group)
    harness.make_model(repo, "aggressor", pte="triton_aggressor", parameters=params,
                       extra=instance_group_text(1, "aggressor", rate_limited))
    sms_file = os.path.join(repo, "sms.txt")
    env = {"TRTET_TEST_ENGINES_SMS_FILE": sms_file, "TRTET_TEST_ENGINES_AUTOINSTALL": "1"}
    trace_path = os.path.join(work, f"trace-{layout}.json")
    server_args = ((trace_args(trace_path) if args.trace else []) + (RATE_LIMIT_SERVER_ARGS if rate_limited else [])
                   + LATENCY_POLICY_ARGS  # the latency model's server: Note [cores of the latency model's own]
                   + SERVER_AWAKE_ARGS)  # Note [the cores kept awake]
    out = {"layout": layout, "windows": [], "checks": [], "load_generator_stalls": []}
    if rate_limited:
        out["rate_limiter"] = {"resource": RATE_LIMIT_RESOURCE, "priority": dict(RATE_LIMIT_PRIORITY)}

    def stalled(tag, e):  # measure_once_more's record of a load generator's stall or failure
        out["load_generator_stalls"].append(str(e))
        print(f"  {tag}: LOAD GENERATOR {e.what.upper()} with the server clean, the window runs again: "
              f"{str(e)[:300]}", flush=True)

    def delayed(tag, window):  # Note [a window the load generator fell behind in]
        late = (f", sent late by up to {window['sent_late_max_us']:.0f} us" if "sent_late_max_us" in window else "")
        print(f"  {tag}: perf_analyzer fell behind the rate (client p99 {window['p99_us']:.0f} us{late}"
              f"{steal_text(window, ', ')}), the window runs again: {window['delayed'][0][:200]}", flush=True)
        looks = out.setdefault("host_after_delayed", [])
        if len(looks) < HOST_LOOKS_DELAYED:  # Note [the host while it measures]
            looks.append({"window": tag, **host_look(CLIENT_CORES)})
            print(f"  {tag}: the host right after it, {host_look_text(looks[-1])}", flush=True)

    def stolen(tag, window):  # Note [a window the hypervisor took from]
        print(f"  {tag}: the hypervisor took {window['steal_percent']:g}% of all cores' time "
              f"({window['steal_core_percent']:g}% on core {window['steal_core']}; client p99 {window['p99_us']:.0f} us), "
              f"at or above {args.rerun_steal_percent:g}%, the window runs again", flush=True)

    on_delayed = None if args.keep_delayed else delayed
    on_stolen = stolen if args.rerun_steal_percent > 0 else None

    out["host_before"] = host_look(CLIENT_CORES)  # Note [the host while it measures]
    print(f"  {layout}: the host before its servers start, {host_look_text(out['host_before'])}", flush=True)
    memory_before, _ = device_memory_mib()
    mps = None
    pa_env = {}
    servers = []
    try:
        if layout == "mps":
            mps = Mps(work)
            pa_env = dict(mps.env)
            share = max(1, min(99, round(100.0 * LAT_SMS / plan_gpu["sm_count"])))
            out["mps_active_thread_percentage"] = {"latency": share, "aggressor": 100 - share}
            lat_server = harness.Server(repo, env={**env, **mps.env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(share)},
                                        args=server_args)
            servers.append(lat_server)
            agg_server = harness.Server(repo, env={**env, **mps.env,
                                                   "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(100 - share)})
            servers.append(agg_server)
        else:
            lat_server = agg_server = harness.Server(repo, env=env, args=server_args)
            servers.append(lat_server)
        for server, model in ((lat_server, "latency"), (agg_server, "aggressor")):
            message = server.load(model)
            if message is not None:
                raise RuntimeError(f"{layout}: {model} did not load: {message}\n{server.log()[-3000:]}")
        for server, model in ((lat_server, "latency"), (agg_server, "aggressor")):
            check_values(server, model)
            out["checks"].append(f"{model} host values")
            if check_device_values(server, model):
                out["checks"].append(f"{model} CUDA shm values")
        memory_after, per_process = device_memory_mib()
        out["device_memory_mib"] = {"gpu_used_before": memory_before, "gpu_used_loaded": memory_after,
                                    "servers": {str(s.process.pid): per_process.get(s.process.pid, -1) for s in servers}}
        # The measured windows take the client's p99.9 from perf_analyzer's export (Note [the
        # client's p99.9]); the warm-up's are not measured.
        def alone_window(protocol, io, window_s, tag, export=True):
            return measure_once_more(stalled, lat_server, protocol, io, args.rate, window_s, work, tag, pa_env, export,
                                     on_delayed if export else None, on_stolen if export else None,
                                     args.rerun_steal_percent)

        def beside_window(protocol, io, window_s, tag, export=True):  # the window, and the aggressor's calls/s over it
            load = AggressorLoad(agg_server, work, pa_env)
            try:
                agg_start, t0 = success_count(agg_server, "aggressor"), time.monotonic()
                window = measure_once_more(stalled, lat_server, protocol, io, args.rate, window_s, work, tag, pa_env,
                                           export, on_delayed if export else None, on_stolen if export else None,
                                           args.rerun_steal_percent)
                return window, (success_count(agg_server, "aggressor") - agg_start) / (time.monotonic() - t0)
            finally:
                load.stop()

        if args.warmup > 0:  # Note [warm-up and order]
            for protocol in PROTOCOLS:
                for io in IOS:
                    tag = f"{layout}_{protocol}_{io}_warmup"
                    alone_window(protocol, io, args.warmup, tag + "_alone", export=False)
                    beside_window(protocol, io, args.warmup, tag + "_beside", export=False)
            out["warmup_windows"] = 2 * len(PROTOCOLS) * len(IOS)
            print(f"  {layout}: warm-up: {out['warmup_windows']} windows of {args.warmup:g} s, not measured", flush=True)
        if args.trace:
            enable_trace(lat_server, "latency")
        for rep in range(args.repeat):
            for protocol in PROTOCOLS:
                for io in IOS:
                    tag = f"{layout}_{protocol}_{io}_{rep}"
                    if rep % 2 == 0:  # Note [warm-up and order]: alone first in even pairs, beside first in odd
                        alone = alone_window(protocol, io, args.window, tag + "_alone")
                        beside, agg_rate = beside_window(protocol, io, args.window, tag + "_beside")
                    else:
                        beside, agg_rate = beside_window(protocol, io, args.window, tag + "_beside")
                        alone = alone_window(protocol, io, args.window, tag + "_alone")
                    window = {"protocol": protocol, "io": io, "rep": rep, "alone": alone, "beside": beside,
                              "aggressor_calls_per_s": agg_rate}
                    if args.control:  # Note [the control]
                        window[CONTROL] = alone_window(protocol, io, args.window, tag + "_control")
                    out["windows"].append(window)
                    print(f"  {tag}: client p99 {alone['p99_us']:.0f} -> {beside['p99_us']:.0f} us, server mean "
                          f"{alone['server_us']:.0f} -> {beside['server_us']:.0f} us, aggressor {agg_rate:.0f}/s",
                          flush=True)
        if args.trace:  # the last window's traces written: TRACE_BATCH requests more, not measured
            measure_once_more(stalled, lat_server, "grpc", "host", args.rate,
                              TRACE_BATCH / args.rate, work, f"{layout}_flush", pa_env)
        for server, model in ((lat_server, "latency"), (agg_server, "aggressor")):
            check_values(server, model)
        out["checks"].append("values again after the load")
        if layout != "mps":
            out["sms_latency"], out["sms_aggressor"] = sms_probe(lat_server, sms_file)
    except MpsUnavailable:
        raise
    except (Exception, harness.Terminated) as e:  # the windows measured so far are kept and reported beside the failure
        out["error"] = str(e)[-3000:]
        if isinstance(e, harness.Terminated):  # Note [a bench stopped by its timeout]: no layout after this one
            out["terminated"] = True
        print(f"  {layout} FAILED: {out['error']}", flush=True)
    finally:
        for server in servers:
            server.stop()
        if mps is not None:
            out["mps_log_tail"] = mps.log()
            mps.quit()
    if args.trace and out["windows"]:
        try:
            traces = read_traces(trace_path)
        except (OSError, ValueError) as e:  # the server-side percentiles go missing, saying why
            traces = {}
            out["trace_error"] = str(e)[:300]
            print(f"  {layout}: the traces could not be read: {e}", flush=True)
        mark_queue_behind(traces, "latency", args.instances)  # Note [where the queue goes]
        for w in out["windows"]:
            for side in sides(w):
                rows = server_times_us(traces, "latency", side["start_ns"], side["end_ns"])
                add_server_percentiles(side, rows)
                add_lateness(side, "received", arrivals_ns(traces, "latency", side["start_ns"], side["end_ns"]),
                             args.rate)  # Note [late at the client or on the way]
                side[SERVER_TIMES] = [r[0] for r in rows]  # for the pooled p99; not in the JSON
    out["pooled"] = pool_rows(out["windows"])  # Note [one p99 per side]
    return out


SERVER_TIMES = "_server_us"  # a window's queue + compute per traced request, µs
CLIENT_TIMES = "_client_us"  # a window's latency per answered request, from perf_analyzer's export, µs
TRANSIENT = (SERVER_TIMES, CLIENT_TIMES)  # per-request lists: kept while the bench runs, not in the JSON

# Note [one p99 per side]
# -----------------------
# A row's pairs give a ratio each (beside ÷ alone, one window over another), and the table shows them;
# the row's reading for a goal is one p99 over every request of the row's beside windows ÷ one p99 over
# every request of its alone windows (`pooled`): the client's from perf_analyzer's exports, by rank as
# perf_analyzer takes its own; the server's from the traces. With two pairs the windows run alone,
# beside, beside, alone (Note [warm-up and order]), so a drift of the host over the four windows
# falls on both sides alike, and each side's p99 rests on twice the requests of one window. The
# control windows are not pooled: they say how far two windows alone differ (Note [the control]).
# A side with a window whose requests were not read (an export or the traces missing) has no pooled
# p99, and the reading falls back to the median of the pairs' ratios (marked so in perf_runs.py).
POOLED_SIDES = (("client", CLIENT_TIMES, nearest_rank), ("server", SERVER_TIMES, percentile))


def pooled(ws, times_key, p99):
    """{"alone_p99_us", "beside_p99_us", "ratio", "alone_n", "beside_n"}: one p99 over every request of the
    pairs' alone windows and one over their beside windows (Note [one p99 per side]); None where a window
    of either side has no per-request times."""
    sides_ = {}
    for side in ("alone", "beside"):
        lists = [w[side].get(times_key) for w in ws if side in w]
        if not lists or any(not values for values in lists):
            return None
        sides_[side] = [t for values in lists for t in values]
    alone, beside = p99(sides_["alone"], 99), p99(sides_["beside"], 99)
    return {"alone_p99_us": alone, "beside_p99_us": beside, "ratio": beside / alone if alone > 0 else float("nan"),
            "alone_n": len(sides_["alone"]), "beside_n": len(sides_["beside"])}


def pool_rows(windows):
    """{"<protocol>_<io>": {"client": pooled or None, "server": pooled or None}} over a layout's windows."""
    rows = {}
    for protocol in PROTOCOLS:
        for io in IOS:
            ws = [w for w in windows if w["protocol"] == protocol and w["io"] == io]
            if ws:
                rows[f"{protocol}_{io}"] = {name: pooled(ws, key, p99) for name, key, p99 in POOLED_SIDES}
    return rows


def without_server_times(results):
    """results without the per-request lists (the JSON keeps the windows' percentiles and the pooled p99s)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TRANSIENT}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(results)


CONTROL = "control"  # a window's second window alone (Note [the control])


def sides(w):
    """The windows of a pair that ran: alone, beside and (with --control) the control."""
    return [w[side] for side in ("alone", "beside", CONTROL) if side in w]


def ratio(w, key, side="beside"):
    """w[side][key] / w["alone"][key]: beside ÷ alone, or with side=CONTROL the control's ÷ alone."""
    a, b = w["alone"].get(key), w.get(side, {}).get(key)
    return b / a if a and b else float("nan")


def summarize(results, args):
    """Rows of the tables (medians over the repetitions, ratios per pair) and the failed checks."""
    rows = []
    failures = []
    for r in results:
        if "error" in r:
            failures.append(f"{r['layout']}: {r['error'][-500:]}")
        if "skipped" in r or "windows" not in r:
            continue
        for protocol in PROTOCOLS:
            for io in IOS:
                ws = [w for w in r["windows"] if w["protocol"] == protocol and w["io"] == io]
                if not ws:
                    continue

                def med(side, key, ws=ws):
                    values = [w[side][key] for w in ws if key in w[side]]
                    return statistics.median(values) if values else float("nan")

                row = {"layout": r["layout"], "protocol": protocol, "io": io, "med": med,
                       "client_ratio": [ratio(w, "p99_us") for w in ws],
                       "server_mean_ratio": [ratio(w, "server_us") for w in ws],
                       "server_p99_ratio": [ratio(w, "server_p99_us") for w in ws],
                       "control_client_ratio": [ratio(w, "p99_us", CONTROL) for w in ws if CONTROL in w],
                       "control_server_ratio": [ratio(w, "server_p99_us", CONTROL) for w in ws if CONTROL in w],
                       "aggressor": statistics.median(w["aggressor_calls_per_s"] for w in ws),
                       "delayed": sum(len(side["delayed"]) for w in ws for side in sides(w)),
                       "ran_again": sum(1 for w in ws for side in sides(w) if side.get("ran_again")),
                       "stolen_again": sum(1 for w in ws for side in sides(w) if side.get("ran_again_stolen")),
                       "windows": ws}
                # The row's readings for the goals (Note [one p99 per side]): the pooled ratio, else the
                # median of the pairs' (pooled: False).
                stored = (r.get("pooled") or {}).get(f"{protocol}_{io}") or {}
                for name, pairs in (("client", "client_ratio"), ("server", "server_p99_ratio")):
                    p = stored.get(name)
                    row[f"{name}_pooled"] = p
                    row[f"{name}_reading"] = p["ratio"] if p else median_of(row[pairs])
                # How far the row's windows alone (its pairs' and the controls') lie apart: max ÷ min p99.
                for name, key in (("client", "p99_us"), ("server", "server_p99_us")):
                    alone = [w[side][key] for w in ws for side in ("alone", CONTROL) if side in w and w[side].get(key, 0) > 0]
                    row[f"{name}_alone_spread"] = max(alone) / min(alone) if len(alone) > 1 else float("nan")
                rows.append(row)
                if args.bound and r["layout"] == "partitioned" and max(row["client_ratio"]) > args.bound:
                    failures.append(f"partitioned {protocol} {io}: client p99 beside / alone "
                                    f"{', '.join(f'{c:.2f}' for c in row['client_ratio'])} (bound {args.bound})")
        if r["layout"] == "partitioned" and "sms_latency" in r:
            lat, agg = set(r["sms_latency"]), set(r["sms_aggressor"])
            if not lat or len(lat) > LAT_SMS or lat & agg or len(agg) <= LAT_SMS:
                failures.append(f"partitioned: latency on {sorted(lat)}, aggressor on {len(agg)} SMs "
                                f"(shared {sorted(lat & agg)})")
    return rows, failures


def median_of(values):
    """The median of the values that are numbers; nan where none is."""
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def reading_text(row):
    """A row's readings for the goals, client (server); '*' after one that is the pairs' median, not pooled."""
    def one(name):
        return ratios_text([row[f"{name}_reading"]]) + ("" if row[f"{name}_pooled"] else "*")
    return f"{one('client')} ({one('server')})"


def ratios_text(values):
    return ",".join("-" if v != v else (f"{v:.0f}" if v >= 100 else f"{v:.2f}") for v in values)


HOST_LOOK_S = 1.0        # Note [the host while it measures]: how long a look at the host lasts
HOST_LOOKS_DELAYED = 4   # looks after windows perf_analyzer fell behind in, at most, per layout


def core_times(path="/proc/stat"):
    """{core: (busy, total, steal)} clock ticks since boot, per core, from /proc/stat (busy counts the
    steal too: Note [time the hypervisor took])."""
    out = {}
    with open(path) as f:
        for line in f:
            name, *values = line.split()
            if name.startswith("cpu") and name[3:].isdigit():
                ticks = [int(v) for v in values[:8]] + [0] * (8 - len(values[:8]))
                # user nice system idle iowait irq softirq steal
                out[int(name[3:])] = (sum(ticks) - ticks[3] - ticks[4], sum(ticks), ticks[7])
    return out


# Note [time the hypervisor took]
# -------------------------------
# In S57's runs perf_analyzer fell behind the rate in 88 of 130 windows, alone as often as beside,
# with the four cores it runs on 0 to 14 % busy by the looks after them; the hosts lent to this work
# expose no CPU idle states, as virtual machines often do not. A virtual CPU can be taken off its
# physical core by the hypervisor, and the guest sees that time only as steal (the eighth figure of a
# core's line in /proc/stat): a sending thread woken on time by its own clock, and not run, sends late.
# So every window records the steal over its own span, over all cores and on the busiest core for it
# (window_steal), and so does each look at the host. A window that fell behind with steal near 0 was
# not held by the hypervisor. /proc/stat counts in clock ticks (1/100 s on these hosts), so over a 2 s
# window a core's steal moves in steps of 0.5 %: one hold of 10 ms shows, a few of 1 ms may not.


def steal_percent(before, after, cores=None):
    """(steal over `cores` (all if None) as a percent of their time, the most on one core, that
    core) between two core_times snapshots; None where no time passed."""
    total = steal = 0
    most, most_core = 0.0, None
    for core in sorted(after if cores is None else cores):
        if core not in before or core not in after:
            continue
        dt, ds = after[core][1] - before[core][1], after[core][2] - before[core][2]
        if dt <= 0:
            continue
        total, steal = total + dt, steal + ds
        if most_core is None or 100.0 * ds / dt > most:
            most, most_core = 100.0 * ds / dt, core
    if total == 0:
        return None
    return round(100.0 * steal / total, 2), round(most, 2), most_core


def steal_text(figures, separator):
    """separator + "steal X% of all cores' time, Y% on core N" from a window's or a look's window_steal
    figures, or "" where it has none."""
    if "steal_percent" not in figures:
        return ""
    return (f"{separator}steal {figures['steal_percent']:g}% of all cores' time, {figures['steal_core_percent']:g}% "
            f"on core {figures['steal_core']}")


STEAL_KEYS = ("steal_percent", "steal_core_percent", "steal_core")


def window_steal(before, after):
    """{"steal_percent", "steal_core_percent", "steal_core"} for a window (Note [time the hypervisor
    took]), or {} where it cannot be told."""
    got = steal_percent(before, after)
    if got is None:
        return {}
    return dict(zip(STEAL_KEYS, got))


def process_times():
    """{pid: (command, user + system clock ticks)} of every process whose /proc/<pid>/stat can be read."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        close = text.rfind(")")  # the command may hold spaces and parentheses
        fields = text[close + 2:].split()  # fields[0] is the state (field 3); utime, stime are 14, 15
        try:
            out[int(entry)] = (text[text.find("(") + 1:close], int(fields[11]) + int(fields[12]))
        except (IndexError, ValueError):
            continue
    return out


def host_look(cores=None, seconds=None, top=4):
    """Note [the host while it measures]: over `seconds`, the `top` busiest processes (percent of one
    core), how busy each of `cores` was (percent; all cores if None) and the load average."""
    seconds = HOST_LOOK_S if seconds is None else seconds
    procs0, cores0, t0 = process_times(), core_times(), time.monotonic()
    time.sleep(seconds)
    procs1, cores1, elapsed = process_times(), core_times(), time.monotonic() - t0
    tick = os.sysconf("SC_CLK_TCK")
    busy = sorted(((100.0 * (t - procs0[pid][1]) / tick / elapsed, command, pid)
                   for pid, (command, t) in procs1.items()
                   if pid in procs0 and procs0[pid][0] == command and t > procs0[pid][1]), reverse=True)
    core_busy = {}
    for core in sorted(cores1 if cores is None else cores):
        if core in cores0 and core in cores1 and cores1[core][1] > cores0[core][1]:
            core_busy[core] = round(100.0 * (cores1[core][0] - cores0[core][0]) / (cores1[core][1] - cores0[core][1]), 1)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    look = {"seconds": round(elapsed, 2), "load_average": load,
            "busiest": [{"command": c, "pid": p, "percent": round(d, 1)} for d, c, p in busy[:top]],
            "cores_busy_percent": core_busy}
    look.update(window_steal(cores0, cores1))  # Note [time the hypervisor took]
    return look


def host_look_text(look):
    busiest = ", ".join(f"{b['command']} {b['percent']:.0f}% (pid {b['pid']})" for b in look["busiest"]) or "none"
    cores = ", ".join(f"{c}: {v:.0f}%" for c, v in look["cores_busy_percent"].items())
    return (f"over {look['seconds']:g} s: busiest {busiest}; load generators' cores busy {cores or '-'}; "
            f"load average {' '.join(look['load_average'])}{steal_text(look, '; ')}")


def host_idle_states():
    """The host's CPU idle states (core 0, from cpuidle): 'name (exit latency us)' each, or why none."""
    base = "/sys/devices/system/cpu/cpu0/cpuidle"
    try:
        names = sorted((d for d in os.listdir(base) if d.startswith("state")), key=lambda d: int(d[5:]))
        states = []
        for d in names:
            with open(f"{base}/{d}/name") as f:
                name = f.read().strip()
            with open(f"{base}/{d}/latency") as f:
                latency = f.read().strip()
            states.append(f"{name} ({latency} us)")
        return ", ".join(states) or "none listed"
    except OSError as e:
        return f"not readable ({e})"


def cpu_list(text):
    """The cores of a kernel CPU list ("0-3,8,10-11"); ValueError on anything else."""
    cores = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        first, last = int(first), int(last or first)
        if last < first:
            raise ValueError(f"CPU list {text!r}: the range {part!r} runs backwards")
        cores.update(range(first, last + 1))
    return cores


def host_core_siblings(base="/sys/devices/system/cpu", own=()):
    """Which of the host's cores share a physical core (SMT siblings, from each core's topology), as
    text; with `own` (the latency model's cores), also whether those are whole physical cores.

    Note [cores that share a physical core]: a thread's SCHED_IDLE policy yields its core to any other
    thread, but not the execution units its core shares with a sibling. Where the latency model's
    instance thread has a sibling that runs the aggressor's threads or a spinner, its host path
    slows whatever the scheduler does. So each run records which cores are siblings (in its host
    settings, which perf_runs.py prints), and its readings are read with that."""
    try:
        cores = sorted(int(d[3:]) for d in os.listdir(base) if d.startswith("cpu") and d[3:].isdigit())
        groups = set()
        for core in cores:
            path = f"{base}/cpu{core}/topology/thread_siblings_list"
            if not os.path.exists(path):  # an offline core
                continue
            with open(path) as f:
                groups.add(tuple(sorted(cpu_list(f.read().strip()))))
    except (OSError, ValueError) as e:
        return f"not readable ({e})"
    shared = sorted(g for g in groups if len(g) > 1)
    if not groups:
        return "not listed"
    physical = f"{len(groups)} physical core{'s' if len(groups) != 1 else ''}"
    text = (f"{physical}; siblings " + " ".join(",".join(map(str, g)) for g in shared) if shared
            else f"{physical}, none shared (no SMT siblings)")
    if own:
        outside = sorted({c for g in groups if set(g) & set(own) for c in g} - set(own))
        text += (f"; the latency model's cores {harness.cores_text(own)} share physical cores with "
                 f"{harness.cores_text(outside)}" if outside
                 else f"; the latency model's cores {harness.cores_text(own)} are whole physical cores")
    return text


def hold_host_idle_latency(us):
    """Note [the host's idle states]: (the open file holding the request, or None; what was done)."""
    try:
        f = open("/dev/cpu_dma_latency", "wb", buffering=0)
        f.write(struct.pack("i", us))
        return f, f"held at {us} us for the run (/dev/cpu_dma_latency)"
    except OSError as e:
        return None, f"not held: /dev/cpu_dma_latency: {e.strerror or e}"


def main():
    global CLIENT_THREADS, CLIENT_CORES, LATENCY_POLICY_ARGS  # --client-threads, --client-cores, --latency-cores
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=2000.0, help="latency model requests/s (open loop)")
    parser.add_argument("--window", type=float, default=2.0, help="seconds per measurement window")
    parser.add_argument("--repeat", type=int, default=3, help="alone/beside pairs per protocol and I/O")
    parser.add_argument("--warmup", type=float, default=1.0,
                        help="seconds of each unmeasured warm-up window (one alone and one beside per protocol and "
                             "I/O, before a layout's measured windows; 0: none)")
    parser.add_argument("--layouts", default="partitioned,whole,mps")
    parser.add_argument("--wait", default="sync", help="the latency model's stream_wait: sync, spin, yield, callback")
    parser.add_argument("--send-from", choices=("instance", "completion_thread"), default="instance",
                        help="the latency model's send_from (Note [sending from a completion thread])")
    parser.add_argument("--instances", type=int, default=1, choices=range(1, 9), metavar="1..8",
                        help="the latency model's instance count (instance_group count)")
    parser.add_argument("--no-trace", dest="trace", action="store_false",
                        help="no Triton request traces (no server-side percentiles)")
    parser.add_argument("--priority", choices=("default", "max", "min"), default="default",
                        help="the latency model's optimization.priority (applied to instances on the whole GPU)")
    parser.add_argument("--rate-limiter", choices=("off", "shared"), default="off",
                        help="shared: on the whole GPU, both models' instances need one global resource of one "
                             "copy (Triton's rate limiter, --rate-limit=execution_count), the latency model at "
                             "priority 1 and the aggressor at 8")
    parser.add_argument("--control", action="store_true",
                        help="end each pair with a window alone again and report its p99 / the first's "
                             "(Note [the control])")
    parser.add_argument("--client-cores", type=int, default=0,
                        help="run perf_analyzer on this many of the host's last cores and the servers on the rest "
                             "(0: no split)")
    parser.add_argument("--latency-cores", type=int, default=0,
                        help="with --client-cores: the last this many of the server's cores are the latency model's "
                             "instance threads' own, through Triton's host policy (Note [cores of the latency "
                             "model's own]; 0: none)")
    parser.add_argument("--client-threads", type=int, default=CLIENT_THREADS, choices=range(1, 17), metavar="1..16",
                        help="perf_analyzer's --max-threads for the latency model's windows (Note [one sending thread])")
    parser.add_argument("--host-idle-latency-us", type=int, default=-1,
                        help="hold the host's CPU idle states to this exit latency for the run (Note [the host's "
                             "idle states]; -1: leave them)")
    parser.add_argument("--keep-cores-awake", action="store_true",
                        help="keep every host core out of its idle halt for the run: the servers' through the "
                             "backend setting keep-cores-awake, perf_analyzer's by SCHED_IDLE spinners (Note [the "
                             "cores kept awake])")
    parser.add_argument("--keep-delayed", action="store_true",
                        help="keep a window perf_analyzer fell behind the rate in, instead of running it once more "
                             "(Note [a window the load generator fell behind in])")
    parser.add_argument("--rerun-steal-percent", type=float, default=STEAL_RERUN_PERCENT,
                        help="run a measured window once more where the hypervisor took this percent of all cores' "
                             "time or more (Note [a window the hypervisor took from]; 0: keep every window)")
    parser.add_argument("--bound", type=float, default=0.0, help="fail above this partitioned client p99 ratio (0: off)")
    parser.add_argument("--json", help="write every window here")
    parser.add_argument("--work", help="keep perf_analyzer's files and the traces here (default: a temporary directory)")
    args = parser.parse_args()
    harness.stop_on_sigterm()  # Note [a bench stopped by its timeout]
    CLIENT_THREADS = args.client_threads
    own_cores = set()
    if args.client_cores:
        server_cores, client_cores = harness.split_host_cores(args.client_cores)
        CLIENT_CORES = sorted(client_cores)
        own_text = ""
        if args.latency_cores:  # Note [cores of the latency model's own]
            try:
                server_cores, own, policy = latency_cores_split(server_cores, args.latency_cores)
            except ValueError as e:
                parser.error(f"--latency-cores: {e}")
            harness.SERVER_CPUS = server_cores
            own_cores = set(own)
            LATENCY_POLICY_ARGS = [policy]
            own_text = f", the latency model's instance threads {harness.cores_text(own)}"
        print(f"host cores: servers {harness.cores_text(server_cores)}{own_text}, perf_analyzer "
              f"{harness.cores_text(client_cores)}", flush=True)
    elif args.latency_cores:
        parser.error("--latency-cores takes --client-cores: the cores are split first between servers and clients")
    idle_hold, idle_text = (None, "left as they are")
    if args.host_idle_latency_us >= 0:
        idle_hold, idle_text = hold_host_idle_latency(args.host_idle_latency_us)
    idle_text = (f"host idle states {idle_text}; the host's: {host_idle_states()}; "
                 f"cores' siblings: {host_core_siblings(own=sorted(own_cores))}; small copies: {small_copies_text()}")
    spinners = []
    if args.keep_cores_awake:  # Note [the cores kept awake]
        server_cores = harness.SERVER_CPUS if harness.SERVER_CPUS is not None else os.sched_getaffinity(0)
        awake = sorted(set(server_cores) | own_cores)
        SERVER_AWAKE_ARGS[:] = [f"--backend-config={harness.BACKEND},keep-cores-awake={harness.cores_text(awake)}"]
        if args.client_cores:
            spinners = keep_cores_awake(CLIENT_CORES)
        idle_text += (f"; cores kept awake: the servers' {harness.cores_text(awake)} (keep-cores-awake)"
                      + (f", perf_analyzer's {harness.cores_text(CLIENT_CORES)} (SCHED_IDLE spinners)"
                         if spinners else ""))
    else:
        SERVER_AWAKE_ARGS[:] = []
        idle_text += "; cores kept awake: none"
    print(idle_text, flush=True)
    plan_gpu = harness.gpu_plan_fields()
    work = args.work or tempfile.mkdtemp(prefix="trtet-perf-")
    os.makedirs(work, exist_ok=True)
    results = []
    t0 = time.monotonic()
    for layout in args.layouts.split(","):
        print(f"{layout}:", flush=True)
        try:
            results.append(run_layout(layout, args, plan_gpu, work))
        except MpsUnavailable as e:  # MPS's control program missing: that layout is skipped, saying why
            results.append({"layout": layout, "skipped": str(e)})
            print(f"  {layout} skipped: {e}", flush=True)
        except Exception as e:  # one layout's failure is reported; the others still run
            results.append({"layout": layout, "error": str(e)[-3000:]})
            print(f"  {layout} FAILED: {str(e)[-3000:]}", flush=True)
        except harness.Terminated as e:  # between windows: what ran is summarized below
            results.append({"layout": layout, "error": str(e), "terminated": True})
        results[-1]["host_settings"] = idle_text  # the idle states and the cores kept awake, for perf_runs.py
        if results[-1].get("terminated"):
            print(f"  stopped by SIGTERM in the {layout} layout: its servers, load generators and MPS daemon are "
                  f"stopped; the layouts after it are not run", flush=True)
            break
    stop_spinners(spinners)  # the measuring is over (the servers kept theirs until they stopped)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(without_server_times(results), f, indent=1)
    rows, failures = summarize(results, args)

    print("\n== perf bench summary ==")
    if harness.SERVER_CPUS is not None:
        own = f", the latency model's instance threads ({LATENCY_POLICY_ARGS[0]})" if LATENCY_POLICY_ARGS else ""
        print(f"host cores: servers {harness.cores_text(harness.SERVER_CPUS)}{own}, perf_analyzer "
              f"{harness.cores_text(os.sched_getaffinity(0))}")
    for r in results:
        if "error" in r:
            print(f"{r['layout']}: FAILED: {r['error'][-600:]}")
        if "skipped" in r:
            print(f"{r['layout']}: skipped: {r['skipped']}")
        if "device_memory_mib" in r:
            m = r["device_memory_mib"]
            extra = f"; MPS active threads {r['mps_active_thread_percentage']}" if "mps_active_thread_percentage" in r else ""
            print(f"{r['layout']}: device memory {m['gpu_used_before']} -> {m['gpu_used_loaded']} MiB used on GPU 0 "
                  f"(per server process: {', '.join(f'{v} MiB' for v in m['servers'].values())}){extra}; checked: "
                  f"{', '.join(r['checks'])}")
        if "rate_limiter" in r:
            print(f"{r['layout']}: rate limiter: both models' instances need the one copy of global resource "
                  f"'{r['rate_limiter']['resource']}' (--rate-limit=execution_count); priorities {r['rate_limiter']['priority']}")
        if r.get("load_generator_stalls"):
            print(f"{r['layout']}: {len(r['load_generator_stalls'])} window(s) run again after perf_analyzer stalled or failed "
                  f"with the server clean; the first: {r['load_generator_stalls'][0][:400]}")
        if "sms_latency" in r:
            lat, agg = set(r["sms_latency"]), set(r["sms_aggressor"])
            print(f"{r['layout']}: SM probe: latency engine on {len(lat)} SMs, aggressor on {len(agg)}, "
                  f"shared {len(lat & agg)}")
    print("\nWhere the latency model's request time goes, means in us alone -> beside (perf_analyzer's CSV): client "
          "send, network+server send/recv, server queue, compute input, compute infer, compute output, client recv;"
          " then the server's p50/p99/p99.9 of queue+compute and of the frontend's whole span (request read to"
          " answer sent), Triton's traces, alone -> beside")
    for row in rows:
        med = row["med"]
        parts = " ".join(f"{med('alone', k):.0f}->{med('beside', k):.0f}" for k in (
            "client_send_us", "network_us", "queue_us", "compute_input_us", "compute_infer_us", "compute_output_us",
            "client_recv_us"))
        server = " ".join(f"{med('alone', k):.0f}->{med('beside', k):.0f}" for k in (
            "server_p50_us", "server_p99_us", "server_p999_us"))
        server += " | frontend " + " ".join(f"{med('alone', k):.0f}->{med('beside', k):.0f}" for k in (
            "frontend_p50_us", "frontend_p99_us", "frontend_p999_us"))
        compute = med("alone", "compute_input_us") + med("alone", "compute_infer_us") + med("alone", "compute_output_us")
        print(f"  {row['layout']:<12}{row['protocol']:<5}{row['io']:<5} {parts} | compute in+infer+out alone "
              f"{compute:.0f} | server {server}")
    print("\nThe server's queue (Note [where the queue goes]), p99 in us alone -> beside: queue, compute; the queue's "
          "parts: dispatch (an instance free) and behind an earlier request; then the requests that waited behind one")
    for row in rows:
        med = row["med"]
        figures = " ".join(f"{name} {med('alone', f'{name}_p99_us'):.0f}->{med('beside', f'{name}_p99_us'):.0f}"
                           for name in ("queue", "compute", "dispatch", "behind"))
        print(f"  {row['layout']:<12}{row['protocol']:<5}{row['io']:<5} {figures} | behind another "
              f"{med('alone', 'queued_behind'):.0f}->{med('beside', 'queued_behind'):.0f} of "
              f"{med('alone', 'traced'):.0f}->{med('beside', 'traced'):.0f}")
    print("\nHow late the latency model's requests came against the even schedule of the rate (Note [late at the "
          "client or on the way]), p99/max in us alone -> beside: when perf_analyzer sent them (its export), when the"
          " server's frontend received them (the traces); then the time the hypervisor took over the windows (Note "
          "[time the hypervisor took]), percent of all cores' time and of the core it took most from")
    for row in rows:
        med = row["med"]
        figures = " | ".join(f"{where} " + " ".join(
            f"{med('alone', f'{where}_late_{q}_us'):.0f}->{med('beside', f'{where}_late_{q}_us'):.0f}"
            for q in ("p99", "max")) for where in ("sent", "received"))
        steal = " ".join(f"{med('alone', k):.2f}->{med('beside', k):.2f}" for k in ("steal_percent", "steal_core_percent"))
        print(f"  {row['layout']:<12}{row['protocol']:<5}{row['io']:<5} {figures} | steal % all cores, busiest core "
              f"{steal}")
    print("\nThe backend's phases of the latency model's requests alone, means in us (trtet_request_phase_duration_us;"
          " compute input = response_new + inputs + outputs, infer = execute + stream_wait + late_outputs, output ="
          " send; release follows the reported end; method is Method::execute, a part of execute): " + ", ".join(PHASES)
          + "; then, of the timed requests (one in 16, their CUDA events included): engine GPU, copies GPU, the"
          " delegate's host time")
    for row in rows:
        means = [w["alone"].get("phases_us") or {} for w in row["windows"]]
        if not any(means):
            print(f"  {row['layout']:<12}{row['protocol']:<5}{row['io']:<5} (not reported)")
            continue
        text = " ".join(f"{percentile([m[p] for m in means if p in m], 50):.1f}" for p in PHASES)
        if all(f in m for m in means if m for f in TIMED):
            text += " | " + " ".join(f"{percentile([m[f] for m in means if f in m], 50):.1f}" for f in TIMED)
        print(f"  {row['layout']:<12}{row['protocol']:<5}{row['io']:<5} {text}")
    print(f"\nperf_analyzer on {plan_gpu['name']} ({plan_gpu['sm_count']} SMs): latency model open loop at "
          f"{args.rate:.0f}/s (stream_wait {args.wait}, send_from {args.send_from}, {args.instances} instance(s), priority {args.priority}, rate limiter {args.rate_limiter}{f', cores of its own {args.latency_cores}' if args.latency_cores else ''}; perf_analyzer with {CLIENT_THREADS} sending thread(s)), {args.window:g} s windows, {args.repeat} alone/beside pairs per row (medians over them; "
          f"ratios per pair, beside / alone; beside first in odd pairs{'; a control window alone ends each pair' if args.control else ''}) after "
          f"{f'{args.warmup:g} s warm-up windows, alone and beside, per protocol and I/O' if args.warmup > 0 else 'no warm-up'}; aggressor: perf_analyzer at concurrency {AGGRESSOR_CONCURRENCY} over gRPC; "
          + (f"a window run again where the hypervisor took {args.rerun_steal_percent:g}% of all cores' time or more"
             if args.rerun_steal_percent > 0 else "every window kept whatever the hypervisor took")
          + f"; {time.monotonic() - t0:.0f} s")
    print(idle_text)
    print(f"{'layout':<12}{'proto':<6}{'I/O':<5}{'p50 al->bes':>13}{'p99 al->bes':>13}{'p99.9 al->bes':>15}{'srv p99.9 al->bes':>19}"
          f"{'client p99 ratio':>18}{'srv p99 ratio':>16}{'reading cl (srv)':>18}{'srv mean ratio':>16}{'lat/s al/bes':>14}{'aggr/s':>8}")
    for row in rows:
        med = row["med"]
        print(f"{row['layout']:<12}{row['protocol']:<6}{row['io']:<5}"
              f"{med('alone', 'p50_us'):>6.0f}->{med('beside', 'p50_us'):<5.0f}"
              f"{med('alone', 'p99_us'):>6.0f}->{med('beside', 'p99_us'):<5.0f}"
              f"{med('alone', 'p999_us'):>7.0f}->{med('beside', 'p999_us'):<6.0f}"
              f"{med('alone', 'server_p999_us'):>9.0f}->{med('beside', 'server_p999_us'):<7.0f}"
              f"{ratios_text(row['client_ratio']):>18}{ratios_text(row['server_p99_ratio']):>16}"
              f"{reading_text(row):>18}"
              f"{ratios_text(row['server_mean_ratio']):>16}"
              f"{latency_calls_per_s(med, 'alone'):>7.0f}/{latency_calls_per_s(med, 'beside'):<6.0f}{row['aggressor']:>8.0f}"
              + (f"  ({row['delayed']} windows where perf_analyzer fell behind the rate)" if row["delayed"] else "")
              + (f"  ({row['ran_again']} windows run again where it fell behind)" if row["ran_again"] else "")
              + (f"  ({row['stolen_again']} windows run again where the hypervisor took {args.rerun_steal_percent:g}% "
                 f"or more)" if row["stolen_again"] else ""))
    print("\nThe rows' readings for the goals (Note [one p99 per side]): one p99 over every request of the row's "
          "windows alone -> one over those beside (us; requests alone/beside), and their ratio, at the client "
          "(perf_analyzer's exports) and at the server (queue + compute, the traces); then how far the row's "
          "windows alone lie apart (max / min p99, the controls included), client / server")
    print(f"{'layout':<12}{'proto':<6}{'I/O':<5}{'client p99':>14}{'requests':>13}{'ratio':>7}{'server p99':>14}"
          f"{'requests':>13}{'ratio':>7}{'alone spread':>14}")
    for row in rows:
        cells = ""
        for name in ("client", "server"):
            p = row[f"{name}_pooled"]
            cells += (f"{p['alone_p99_us']:>7.0f}->{p['beside_p99_us']:<6.0f}{p['alone_n']:>7}/{p['beside_n']:<5}"
                      f"{p['ratio']:>7.2f}" if p else f"{'(not pooled)':>27}{ratios_text([row[f'{name}_reading']]) + '*':>7}")
        print(f"{row['layout']:<12}{row['protocol']:<6}{row['io']:<5}{cells}"
              f"{ratios_text([row['client_alone_spread']]) + ' / ' + ratios_text([row['server_alone_spread']]):>14}")
    missing = [side["export_error"] for row in rows for w in row["windows"] for side in sides(w) if "export_error" in side]
    if missing:  # Note [the client's p99.9]
        print(f"client p99.9 not read in {len(missing)} window(s) (nan in the table); the first: {missing[0]}")
    if any(row["control_client_ratio"] for row in rows):
        print("\nThe control (Note [the control]): a window alone again after each pair; its p99 / the first alone "
              "window's, per pair, at the client and at the server (queue + compute), beside the pair's own ratios")
        print(f"{'layout':<12}{'proto':<6}{'I/O':<5}{'control client':>16}{'control srv':>14}{'client ratio':>14}"
              f"{'srv ratio':>12}")
        for row in rows:
            print(f"{row['layout']:<12}{row['protocol']:<6}{row['io']:<5}{ratios_text(row['control_client_ratio']):>16}"
                  f"{ratios_text(row['control_server_ratio']):>14}{ratios_text(row['client_ratio']):>14}"
                  f"{ratios_text(row['server_p99_ratio']):>12}")
    print("perf bench: " + ("FAILED: " + "; ".join(failures) if failures else "all checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
