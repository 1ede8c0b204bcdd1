"""A traffic shift through Triton (scripts/gpu-triton with TRTET_GPU_TRITON_SHIFT=1): two models whose
load swaps halfway, served by a static plan, by the whole GPU, and by a plan set and its controller
(docs/SERVING.md, "Following the load: plan sets"), measured with perf_analyzer.

  models   "a" and "b": triton_aggressor.pte by default (2048 blocks of 50 us, test engine "waves", which
           records its SMs; its time scales with the SMs: ~2.6 ms a call on 40 SMs, ~1.3 ms on 80), so a
           model needs the larger partition at the higher rate (--program-a, --program-b)
  phases   phase 1: a at --rate R and b at 4R; phase 2: a at 4R and b at R; --phase-s each (30 s). One
           perf_analyzer per model drives both phases open loop without a gap (--request-intervals:
           constant spacing 1/rate within a phase, the spacing changing at the shift); with --schedule
           phases, two perf_analyzers per phase at --request-rate-range instead (a gap of their start-up
           at the shift)
  plans    two plans of this GPU, the set's: "a<S>-b<L>" (a on the small size S, b on the large L: the
           plan for phase 1) and "a<L>-b<S>" (phase 2's), S + L what one split hands out
           (max_partitioned_sms, read as test_plan_set.py reads it: trtet_triton_plan_gpu)

Calibration first (unless --curves gives the curves): each program alone on each size (a plan file
with one partition), perf_analyzer at --cal-rates x R for --cal-s each; the point's p99 is the
server's queue + compute (Triton's traces: QUEUE_START to COMPUTE_END), kept where perf_analyzer
sustained the rate (throughput >= 95 % of it); the curve ends at the first rate not sustained (beyond
it the controller predicts nothing: infeasible). These are the set's "curves" (PlanSet.h).

Targets (--target-a-us, --target-b-us; 0: chosen): each model's target is --target-margin x the
larger of its predicted p99 on the plan the controller should pick in each phase, so that the set's
right plan meets every target in both phases; the bench then checks, on the curves, that no single
plan meets both phases (each plan overloads one model's small partition in one phase).

Layouts (--layouts):
  static       each plan of the set as a plan file (both models on their partitions throughout), one
               run per plan; the best is the one whose worst (phase, model) p99 / target is lowest:
               every plan is run, and the best is reported as (a)
  whole        both models on the whole GPU (no plan)
  controller   the plan set (plan_set_file) with slo_p99_us per model, slo_interval_ms --slo-interval-ms
               (100), slo_window_s --slo-window-s (0.5)

Measured per layout, phase and model, from Triton's traces (every request, TIMESTAMPS level) in
--window-s windows (1 s) from the phase's start: calls/s and p99 of queue + compute per window; after
--settle-s (1 s) the phase's steady p99 and calls/s, the first --settle-s reported apart; whether each
target is met (steady p99 <= target); the settling time: the windows from the phase's start until
every later window of the phase meets every target. perf_analyzer's own client p99 (over its whole
run) beside. For the controller: the plan each model runs on, sampled every 0.1 s from /metrics
(trtet_plan_set_plan{model,gpu}, trtet_plan_set_switches{gpu}), per window, and the switch lines of
the server's log ("switched to plan").

Checked: the values of both models through the server (host I/O) before and after the load; no failed
request (Triton's statistics, per model) and every perf_analyzer run complete; each model's engine on
its partition: the SM probe (the waves engine records the SMs it ran on, process-wide) with one model
called alone at a time before and after the load, so each probe reads that model's SMs on the plan
current then (read from /metrics before and after the probe; repeated if a switch came in between):
at most its partition's size, and the two models' SMs disjoint. During the load both models run at
once and the probe cannot tell their SMs apart: what runs under load is checked through the plan
gauge and the log, not the probe.

The goal, printed and checked (--no-goal leaves it a report): the controller meets every target in
both phases with at most --settle-s of settling per shift (each phase's p99 after --settle-s within its
target, and every model on the plan it ends the phase on from --settle-s on, by the plan gauge), while
the best static plan misses a target in one phase. The settling time by every window's own p99 is
printed beside it: a window of a few hundred calls goes over on one slow call, static plans too. The summary is printed last; --json keeps everything. Exit status 1 when a check fails.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

MODELS = ("a", "b")
SHAPE = [1, 1024]
ONE_GPU = 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n'
SUSTAINED = 0.95


# ---- pure helpers (no server, no GPU: test_shift_bench_logic.py) ----

def percentile(values, q):
    """numpy's default percentile (linear between the closest ranks); nan for no values."""
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def phase_rates(rate, factor=4.0):
    """[{model: calls/s}] for phase 1 (a at R, b at factor x R) and phase 2 (swapped)."""
    return [{"a": rate, "b": factor * rate}, {"a": factor * rate, "b": rate}]


def plan_sizes(gpu):
    """(small, large) SM counts of the two plans: together what one split hands out
    (max_partitioned_sms, on the granularity), the large one about two thirds of it."""
    step = max(int(gpu.get("granularity", 8)), int(gpu.get("alignment", 8)), 1)
    total = int(gpu["max_partitioned_sms"]) // step * step
    large = int(round(total * 2 / 3 / step)) * step
    small = total - large
    minimum = int(gpu.get("min_partition", step))
    if small < minimum or large <= small:
        raise ValueError(f"cannot make two sizes from {total} SMs (min partition {minimum}, step {step})")
    return small, large


def make_plans(small, large):
    """The set's plans, phase 1's first: [(name, {model: sms})]."""
    return [(f"a{small}-b{large}", {"a": small, "b": large}), (f"a{large}-b{small}", {"a": large, "b": small})]


def intervals_us(phases, phase_s, model):
    """perf_analyzer's --request-intervals for `model` over `phases` ({model: rate} each): constant
    spacing 1e6 / rate within a phase, round(rate x phase_s) requests each."""
    out = []
    for rates in phases:
        count = int(round(rates[model] * phase_s))
        out += [int(round(1e6 / rates[model]))] * count
    return out


def parse_pa_csv(text):
    """perf_analyzer's -f CSV (a header and one row per measurement) as a dict of the first row."""
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise ValueError("perf_analyzer wrote no rows")
    return rows[0]


def pa_figures(row):
    def value(column):
        try:
            return float(row.get(column) or "nan")
        except ValueError:
            return float("nan")
    return {"throughput": value("Inferences/Second"), "client_p99_us": value("p99 latency"),
            "client_p50_us": value("p50 latency")}


def request_times(traces):
    """{model: sorted [(REQUEST_START ns, queue + compute us)]} from perf_bench.read_traces's dict."""
    out = {}
    for t in traces.values():
        if "model" in t and all(k in t for k in ("REQUEST_START", "QUEUE_START", "COMPUTE_END")):
            out.setdefault(t["model"], []).append((t["REQUEST_START"], (t["COMPUTE_END"] - t["QUEUE_START"]) / 1e3))
    for v in out.values():
        v.sort()
    return out


def served_rate(traces, model, start_ns, end_ns):
    """Calls/s the server carried for `model`'s requests that started in [start_ns, end_ns]: their count
    over the span from the first one's REQUEST_START to the last COMPUTE_END (a backlog stretches the
    span: an open-loop load the partition cannot carry shows a rate below the one offered). nan for
    fewer than two requests. perf_analyzer's own Inferences/Second is not used for this: over a short
    run it counts its start-up and varies from run to run."""
    starts, ends = [], []
    for t in traces.values():
        if t.get("model") == model and "COMPUTE_END" in t and start_ns <= t.get("REQUEST_START", -1) <= end_ns:
            starts.append(t["REQUEST_START"])
            ends.append(t["COMPUTE_END"])
    if len(starts) < 2 or max(ends) <= min(starts):
        return float("nan")
    return len(starts) / ((max(ends) - min(starts)) / 1e9)


def windows_of(samples, start_ns, window_s, count):
    """`count` windows of `window_s` from `start_ns`: [{"n", "calls_per_s", "p99_us"}] of the samples
    ((start ns, us)) that started in each."""
    width = int(window_s * 1e9)
    buckets = [[] for _ in range(count)]
    for t, us in samples:
        k = (t - start_ns) // width
        if 0 <= k < count:
            buckets[k].append(us)
    return [{"n": len(b), "calls_per_s": len(b) / window_s, "p99_us": percentile(b, 99)} for b in buckets]


def window_met(windows_by_model, targets, k):
    """Whether window k meets every model's target (a window with no call meets it)."""
    for model, windows in windows_by_model.items():
        w = windows[k]
        if w["n"] and not w["p99_us"] <= targets[model]:
            return False
    return True


def settling_windows(met):
    """The windows from the phase's start until every later window meets every target: 0 when all
    do, None when the last one misses."""
    if not met or not met[-1]:
        return None
    k = len(met)
    while k > 0 and met[k - 1]:
        k -= 1
    return k


def plan_settling_windows(plans):
    """From {model: [plan index at the end of each window]}: the windows from the phase's start until
    every model's plan is, in every later window, the one it ends the phase on (0 when it never
    changes); None when a window's plan is unknown (no sample yet) from there on, or nothing was sampled."""
    lists = list(plans.values())
    if not lists or not all(lists) or any(len(x) != len(lists[0]) for x in lists):
        return None
    finals = [x[-1] for x in lists]
    if any(f is None for f in finals):
        return None
    k = len(lists[0])
    while k > 0 and all(x[k - 1] == f for x, f in zip(lists, finals)):
        k -= 1
    return k


def phase_summary(samples, start_ns, phase_s, settle_s):
    """(steady, settling): p99 and calls/s of the samples after `settle_s` into the phase, and of those
    in its first `settle_s`."""
    cut = start_ns + int(settle_s * 1e9)
    end = start_ns + int(phase_s * 1e9)
    steady = [us for t, us in samples if cut <= t < end]
    early = [us for t, us in samples if start_ns <= t < cut]

    def figures(values, seconds):
        return {"n": len(values), "p99_us": percentile(values, 99),
                "calls_per_s": len(values) / seconds if seconds > 0 else float("nan")}
    return figures(steady, phase_s - settle_s), figures(early, settle_s)


def curve_from_points(points, sustained=SUSTAINED):
    """A curve [(rate, p99_us)] from calibration points ({"rate", "throughput", "p99_us"}: throughput
    the rate the server carried, served_rate), in rate order, ending before the first rate not
    sustained (throughput under `sustained` x rate) or without a p99."""
    out = []
    for p in sorted(points, key=lambda p: p["rate"]):
        if not (p["throughput"] >= sustained * p["rate"]) or not p["p99_us"] == p["p99_us"]:
            break
        out.append((float(p["rate"]), float(p["p99_us"])))
    return out


def predict(curve, rate):
    """The controller's prediction (docs/PLANNING.md, "the controller's rule"): linear between points,
    the first point's p99 below the first rate, None (infeasible) beyond the last rate or without a
    curve."""
    if not curve or rate > curve[-1][0]:
        return None
    if rate <= curve[0][0]:
        return curve[0][1]
    for (r0, p0), (r1, p1) in zip(curve, curve[1:]):
        if r0 <= rate <= r1:
            return p0 + (p1 - p0) * (rate - r0) / (r1 - r0) if r1 > r0 else p1
    return None


def predicted_table(curves, plans, phases):
    """{plan: [{model: predicted p99 or None} per phase]}; curves: {model: {sms: curve}}."""
    return {name: [{m: predict(curves[m].get(sizes[m]), rates[m]) for m in rates} for rates in phases]
            for name, sizes in plans}


def choose_targets(curves, plans, phases, margin, given=None):
    """{model: target us}: a given one (above 0) as given; else `margin` x the larger over the phases
    of its predicted p99 on that phase's own plan (the i-th plan for phase i). Raises ValueError where
    a phase's own plan predicts nothing for a model (the rate beyond its curve)."""
    given = given or {}
    table = predicted_table(curves, plans, phases)
    targets = {}
    for m in phases[0]:
        if given.get(m):
            targets[m] = float(given[m])
            continue
        worst = []
        for i, _ in enumerate(phases):
            p = table[plans[i][0]][i][m]
            if p is None:
                raise ValueError(f"model {m}: plan {plans[i][0]} predicts nothing at {phases[i][m]:g} calls/s "
                                 f"in phase {i + 1} (beyond its measured curve): lower --rate")
            worst.append(p)
        targets[m] = float(math.ceil(margin * max(worst)))
    return targets


def plans_meeting(curves, plans, phases, targets):
    """{plan: [met in phase i]} as the curves predict (None, infeasible, misses)."""
    table = predicted_table(curves, plans, phases)
    return {name: [all(p is not None and p <= targets[m] for m, p in row.items()) for row in rows]
            for name, rows in table.items()}


def parse_metric(text, family):
    """[(labels dict, value)] of `family`'s series in Prometheus text."""
    out = []
    pattern = re.compile(r'^' + re.escape(family) + r'\{([^}]*)\}\s+(\S+)')
    for line in text.splitlines():
        m = pattern.match(line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            out.append((labels, float(m.group(2))))
    return out


SWITCH_LINE = re.compile(r"switched to plan '([^']+)' \(index (\d+)\)")


def switch_lines(log):
    """[(plan name, index, the line)] of the backend's switch lines in the server's log."""
    return [(m.group(1), int(m.group(2)), line.strip()[:300]) for line in log.splitlines()
            for m in [SWITCH_LINE.search(line)] if m]


def plan_per_window(timeline, start_ns, window_s, count, model):
    """The plan index `model` ran on at the end of each window, from (ns, {model: index}) samples
    (None before the first sample)."""
    out = []
    width = int(window_s * 1e9)
    i = 0
    current = None
    for k in range(count):
        end = start_ns + (k + 1) * width
        while i < len(timeline) and timeline[i][0] <= end:
            current = timeline[i][1].get(model, current)
            i += 1
        out.append(current)
    return out


def worst_ratio(layout_result, targets):
    """The largest steady p99 / target over the phases and models (inf where a phase has no calls)."""
    worst = 0.0
    for phase in layout_result["phases"]:
        for m, r in phase["models"].items():
            p = r["steady"]["p99_us"]
            worst = max(worst, p / targets[m] if p == p else float("inf"))
    return worst


def sms_ok(sms, size, other):
    """Problems with one model's probed SMs on a partition of `size` SMs beside the other model's."""
    problems = []
    if not sms:
        problems.append("no SMs recorded")
    if size and len(set(sms)) > size:
        problems.append(f"{len(set(sms))} SMs on a partition of {size}")
    if other is not None and set(sms) & set(other):
        problems.append(f"shares SMs {sorted(set(sms) & set(other))[:8]} with the other model")
    return problems


# ---- the server side (GPU) ----

def pa_command(server, model, work, tag, intervals=None, rate=None, count=0):
    import perf_bench
    binary, env = perf_bench.perf_analyzer_command()
    csv_path = os.path.join(work, f"{tag}.csv")
    command = [binary, "-m", model, "-u", f"127.0.0.1:{server.grpc_port}", "-i", "grpc", "--async",
               "--max-threads", "16", "--shape", f"input_0:{','.join(map(str, SHAPE))}",
               "--shape", f"input_1:{','.join(map(str, SHAPE))}", "--input-data", "random", "--percentile", "99",
               "-f", csv_path, "--request-count", str(count)]
    if intervals is not None:
        path = os.path.join(work, f"{tag}.intervals")
        with open(path, "w") as f:
            f.write("\n".join(map(str, intervals)) + "\n")
        command += ["--request-intervals", path]
    else:
        command += ["--request-rate-range", str(rate), "--request-distribution", "constant"]
    return command, env, csv_path


class Load:
    """perf_analyzer processes started together and waited for; their CSV figures per tag."""

    def __init__(self, commands, work, timeout_s):
        self.runs = []
        self.t0 = time.monotonic_ns()
        for tag, (command, env, csv_path) in commands.items():
            log = open(os.path.join(work, f"{tag}.log"), "w")
            p = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            self.runs.append((tag, p, log, csv_path))
        self.timeout_s = timeout_s

    def wait(self):
        out, errors = {}, []
        deadline = time.monotonic() + self.timeout_s
        for tag, p, log, csv_path in self.runs:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait(timeout=10)
            log.close()
            with open(log.name, errors="replace") as f:
                said = f.read()
            if p.returncode != 0 or not os.path.exists(csv_path):
                if "Usage:" in said:
                    said = said[:said.index("Usage:")]
                errors.append(f"perf_analyzer {tag} failed ({p.returncode}): {said[-1500:]}")
                continue
            with open(csv_path) as f:
                figures = pa_figures(parse_pa_csv(f.read()))
            figures["fell_behind"] = sum(1 for line in said.splitlines() if "not able to keep up" in line)
            out[tag] = figures
        return out, errors


class MetricsPoller:
    """/metrics every `period_s`: (monotonic ns, {model: plan index}, switches) samples."""

    def __init__(self, server, period_s=0.1):
        self.server, self.period_s = server, period_s
        self.samples, self.stop_event = [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def read(self):
        import urllib.request
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.server.metrics_port}/metrics", timeout=5).read().decode()
        plans = {labels.get("model"): int(v) for labels, v in parse_metric(text, "trtet_plan_set_plan")}
        switches = sum(v for _, v in parse_metric(text, "trtet_plan_set_switches"))
        return plans, switches

    def _run(self):
        while not self.stop_event.is_set():
            try:
                plans, switches = self.read()
                self.samples.append((time.monotonic_ns(), plans, switches))
            except Exception:  # noqa: BLE001 - a missed sample is only a gap in the timeline
                pass
            self.stop_event.wait(self.period_s)

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=10)


def inference_counts(server, model):
    stats = server.client.get_inference_statistics(model)["model_stats"][0]["inference_stats"]
    return int(stats["success"]["count"]), int(stats["fail"]["count"])


def start_server(repo, models, sms_file, trace_path):
    import harness
    import perf_bench
    env = {"TRTET_TEST_ENGINES_SMS_FILE": sms_file, "TRTET_TEST_ENGINES_AUTOINSTALL": "1"}
    server = harness.Server(repo, env=env, args=perf_bench.trace_args(trace_path))
    try:
        for model in models:
            message = server.load(model)
            if message is not None:
                raise RuntimeError(f"{model} did not load: {message}\n{server.log()[-3000:]}")
    except Exception:
        server.stop()
        raise
    return server


def probe_models(server, sms_file, sizes_of_plan, plan_names, poller):
    """{model: {"sms": [...], "plan": name or None, "size": sms}} for each model alone (the SM probe),
    on the plan current then; `sizes_of_plan` maps a plan index (None: a fixed layout) to {model: sms}."""
    import serving_bench
    out = {}
    for model in MODELS:
        for _ in range(3):
            before = poller.read()[0].get(model) if poller else None
            sms = serving_bench.sms_of(server, sms_file, model)
            after = poller.read()[0].get(model) if poller else None
            if before == after:
                break
        sizes = sizes_of_plan.get(after)
        out[model] = {"sms": sorted(set(sms)), "plan": plan_names.get(after), "size": sizes[model] if sizes else 0}
    return out


def probe_problems(probe, tag):
    problems = []
    for m in MODELS:
        other = probe[MODELS[1 - MODELS.index(m)]]
        if not probe[m]["size"]:
            problems.append(f"{tag}: model {m}: its plan is not known (no trtet_plan_set_plan on /metrics)")
            continue
        same_plan = other["plan"] == probe[m]["plan"]
        for p in sms_ok(probe[m]["sms"], probe[m]["size"], other["sms"] if same_plan else None):
            problems.append(f"{tag}: model {m} on plan {probe[m]['plan']}: {p}")
    return problems


def warm_up(server, models, args, work, tag):
    """--warmup-s of calls at the lowest rate of the run, untraced and unmeasured: the first calls of a
    model (its engine's first launches, the server's first requests) are slower than the rest."""
    if args.warmup_s <= 0:
        return
    rate = max(10.0, min(args.cal_rates) * args.rate)
    count = max(int(rate), int(rate * args.warmup_s))
    _, errors = Load({f"{tag}_warmup_{m}": pa_command(server, m, work, f"{tag}_warmup_{m}", rate=rate, count=count)
                      for m in models}, work, args.warmup_s * 4 + 60).wait()
    if errors:
        raise RuntimeError("warm-up: " + "; ".join(errors))


def calibrate(args, programs, sizes, gpu, work):
    """{program: {sms: [points]}}: each program alone on a partition of each size."""
    import harness
    import perf_bench
    points = {}
    for program in sorted(set(programs.values())):
        for sms in sizes:
            repo = tempfile.mkdtemp(prefix=f"cal-{program}-{sms}-", dir=work)
            plan = os.path.join(repo, "plan.json")
            harness.write_plan(plan, [("a", sms)], gpu=gpu)
            harness.make_model(repo, "a", pte=program, parameters={"plan_file": plan}, extra=ONE_GPU)
            trace = os.path.join(work, f"trace-cal-{program}-{sms}.json")
            server = start_server(repo, ["a"], os.path.join(repo, "sms.txt"), trace)
            runs = []
            try:
                perf_bench.check_values(server, "a")
                warm_up(server, ["a"], args, work, f"cal-{program}-{sms}")
                perf_bench.enable_trace(server, "a")
                for mult in args.cal_rates:
                    rate = mult * args.rate
                    count = max(int(rate), int(rate * args.cal_s))
                    tag = f"cal_{program}_{sms}_{rate:g}"
                    load = Load({tag: pa_command(server, "a", work, tag, rate=rate, count=count)}, work,
                                args.cal_s * 4 + 60)
                    figures, errors = load.wait()
                    if errors:
                        raise RuntimeError("; ".join(errors))
                    figures[tag]["pa_throughput"] = figures[tag].pop("throughput")
                    runs.append({"rate": rate, "start_ns": load.t0, "end_ns": time.monotonic_ns(), **figures[tag]})
                    print(f"  calibration {program} on {sms} SMs at {rate:g}/s: perf_analyzer "
                          f"{figures[tag]['pa_throughput']:.0f}/s, client p99 {figures[tag]['client_p99_us']:.0f} us",
                          flush=True)
                    # perf_analyzer waits for every answer: a backlog stretches its run. One far past
                    # the schedule was not carried (higher rates would not be either); the traces
                    # judge the others (served_rate, below).
                    if (runs[-1]["end_ns"] - runs[-1]["start_ns"]) / 1e9 > 1.5 * count / rate + 2.0:
                        break
                perf_bench.check_values(server, "a")
                # TRACE_BATCH calls more, not measured, so the last point's traces are written.
                Load({f"cal_flush_{program}_{sms}": pa_command(server, "a", work, f"cal_flush_{program}_{sms}", rate=200,
                                                               count=perf_bench.TRACE_BATCH)}, work, 120).wait()
            finally:
                server.stop()
            traces = perf_bench.read_traces(trace)
            samples = request_times(traces).get("a", [])
            for r in runs:
                values = [us for t, us in samples if r["start_ns"] <= t <= r["end_ns"]]
                r["p99_us"] = percentile(values, 99)
                r["traced"] = len(values)
                r["throughput"] = served_rate(traces, "a", r["start_ns"], r["end_ns"])
                print(f"  calibration {program} on {sms} SMs at {r['rate']:g}/s: served {r['throughput']:.0f}/s, "
                      f"p99 {r['p99_us']:.0f} us (queue + compute, {len(values)} traced)", flush=True)
            points.setdefault(program, {})[sms] = runs
    return points


def run_layout(name, params, args, phases, targets, work, plan_info=None):
    """One server with both models (`params`: {model: parameters}), both phases; the result dict."""
    import harness
    import perf_bench
    slug = re.sub(r"[^A-Za-z0-9_.-]", "-", name)  # no space in a path or a tag
    repo = tempfile.mkdtemp(prefix=f"repo-{slug}-", dir=work)
    programs = {"a": args.program_a, "b": args.program_b}
    for m in MODELS:
        harness.make_model(repo, m, pte=programs[m], parameters=params[m], extra=ONE_GPU)
    sms_file = os.path.join(repo, "sms.txt")
    trace = os.path.join(work, f"trace-{slug}.json")
    out = {"layout": name, "checks": [], "problems": []}
    plan_info = plan_info or {"sizes": {}, "names": {}}
    server = start_server(repo, MODELS, sms_file, trace)
    poller = None
    try:
        for m in MODELS:
            perf_bench.check_values(server, m)
        out["checks"].append("values of a and b before the load")
        poller = MetricsPoller(server) if name == "controller" else None
        if plan_info["sizes"]:
            out["probe_before"] = probe_models(server, sms_file, plan_info["sizes"], plan_info["names"], poller)
            out["problems"] += probe_problems(out["probe_before"], "before the load")
        warm_up(server, MODELS, args, work, slug)
        counts_before = {m: inference_counts(server, m) for m in MODELS}
        for m in MODELS:
            perf_bench.enable_trace(server, m)
        switches_before = poller.read()[1] if poller else 0
        total_s = args.phase_s * len(phases)
        if args.schedule == "intervals":
            commands = {}
            for m in MODELS:
                iv = intervals_us(phases, args.phase_s, m)
                commands[f"{slug}_{m}"] = pa_command(server, m, work, f"{slug}_{m}", intervals=iv, count=len(iv))
            load = Load(commands, work, total_s * 3 + 60)
            launches = [load.t0]
            figures, errors = load.wait()
        else:
            figures, errors, launches = {}, [], []
            for i, rates in enumerate(phases):
                commands = {f"{slug}_{m}_p{i + 1}": pa_command(
                    server, m, work, f"{slug}_{m}_p{i + 1}", rate=rates[m],
                    count=max(int(rates[m]), int(round(rates[m] * args.phase_s)))) for m in MODELS}
                load = Load(commands, work, args.phase_s * 3 + 60)
                launches.append(load.t0)
                f, e = load.wait()
                figures.update(f)
                errors += e
        out["perf_analyzer"] = figures
        out["problems"] += errors
        end_ns = time.monotonic_ns()
        for m in MODELS:
            perf_bench.check_values(server, m)
        out["checks"].append("values of a and b after the load")
        counts_after = {m: inference_counts(server, m) for m in MODELS}
        out["requests"] = {m: {"succeeded": counts_after[m][0] - counts_before[m][0],
                               "failed": counts_after[m][1] - counts_before[m][1]} for m in MODELS}
        for m in MODELS:
            if out["requests"][m]["failed"]:
                out["problems"].append(f"model {m}: {out['requests'][m]['failed']} failed requests")
        out["checks"].append("no failed request (Triton's statistics)")
        if poller:
            out["switches_metric"] = poller.read()[1] - switches_before
        # A flush: TRACE_BATCH calls more, not measured, so the last window's traces are written.
        flush = Load({f"{slug}_flush_{m}": pa_command(server, m, work, f"{slug}_flush_{m}", rate=200,
                                                      count=perf_bench.TRACE_BATCH) for m in MODELS}, work, 120)
        flush.wait()
        if plan_info["sizes"]:
            out["probe_after"] = probe_models(server, sms_file, plan_info["sizes"], plan_info["names"], poller)
            out["problems"] += probe_problems(out["probe_after"], "after the load")
            out["checks"].append("each model alone on its plan's partition before and after the load (SM probe)")
    finally:
        if poller:
            poller.stop()
        log = server.log()
        server.stop()
    out["switch_lines"] = [line for _, _, line in switch_lines(log)]
    samples = request_times(perf_bench.read_traces(trace))
    samples = {m: [s for s in samples.get(m, []) if launches[0] <= s[0] <= end_ns] for m in MODELS}
    out["phases"] = []
    firsts = [samples[m][0][0] for m in MODELS if samples[m]]
    if not firsts:
        out["problems"].append("no traced request")
        return out
    count = int(math.ceil(args.phase_s / args.window_s))
    for i, rates in enumerate(phases):
        if args.schedule == "intervals":
            start = min(firsts) + int(i * args.phase_s * 1e9)
        else:
            after = [s[0] for m in MODELS for s in samples[m] if s[0] >= launches[i]]
            start = min(after) if after else launches[i]
        windows = {m: windows_of(samples[m], start, args.window_s, count) for m in MODELS}
        met = [window_met(windows, targets, k) for k in range(count)]
        settle = settling_windows(met)
        phase = {"phase": i + 1, "rates": rates, "start_ns": start, "met_per_window": met,
                 "settling_windows": settle,
                 "settling_s": None if settle is None else settle * args.window_s, "models": {}}
        if poller:
            phase["plan_per_window"] = {m: plan_per_window(poller.samples, start, args.window_s, count, m)
                                        for m in MODELS}
            settled = plan_settling_windows(phase["plan_per_window"])
            phase["plan_settling_s"] = None if settled is None else settled * args.window_s
        for m in MODELS:
            steady, early = phase_summary(samples[m], start, args.phase_s, args.settle_s)
            phase["models"][m] = {"steady": steady, "settling": early, "windows": windows[m],
                                  "target_us": targets[m], "met": steady["p99_us"] <= targets[m]}
        out["phases"].append(phase)
    out["start_skew_ms"] = (max(firsts) - min(firsts)) / 1e6
    return out


# ---- main ----

def load_curves(path):
    """--curves: {"a": {"<sms>": [[rate, p99_us], ...]}, "b": {...}} -> {model: {sms: curve}}."""
    with open(path) as f:
        data = json.load(f)
    return {m: {int(k): [(float(r), float(p)) for r, p in v] for k, v in data[m].items()} for m in MODELS}


def print_layout(r, targets, window_s):
    if "error" in r:
        print(f"{r['layout']}: FAILED: {r['error'][-600:]}")
        return
    for phase in r.get("phases", []):
        settle = "never" if phase["settling_s"] is None else f"{phase['settling_s']:g} s"
        parts = []
        for m, x in phase["models"].items():
            parts.append(f"{m} {phase['rates'][m]:g}/s: p99 {x['steady']['p99_us']:.0f} us (target "
                         f"{targets[m]:.0f}, {'met' if x['met'] else 'MISSED'}) {x['steady']['calls_per_s']:.0f}/s; "
                         f"first {x['settling']['n']} calls p99 {x['settling']['p99_us']:.0f}")
        plan_settle = phase.get("plan_settling_s")
        plan_text = "" if "plan_per_window" not in phase else (
            "; plan final after " + ("never" if plan_settle is None else f"{plan_settle:g} s"))
        print(f"  {r['layout']:<22} phase {phase['phase']}: {'; '.join(parts)}{plan_text}; every window's p99 within "
              f"its target after {settle}")
        # Windows over a target after the first (the shift's own), per model: isolated misses that
        # keep "settled" from coming, told apart from a plan that stays wrong.
        late = []
        for m, x in phase["models"].items():
            over = [f"{i}: {w['p99_us']:.0f}" for i, w in enumerate(x.get("windows", []))
                    if i > 0 and w.get("p99_us") is not None and w["p99_us"] > targets[m]]
            late.append(f"{m} {len(over)} of {max(len(x.get('windows', [])) - 1, 0)}" + (f" ({', '.join(over[:6])} us)" if over else ""))
        print(f"  {'':<22}   windows after the first over the target: {'; '.join(late)}")
        if "plan_per_window" in phase:
            plans = phase["plan_per_window"]
            print(f"  {'':<22}   plan per {window_s:g} s window (a/b): "
                  + " ".join(f"{x}/{y}" for x, y in zip(plans["a"], plans["b"])))
    if "switches_metric" in r:
        print(f"  {r['layout']:<22} switches: {r['switches_metric']:.0f} (metric), {len(r['switch_lines'])} log lines")
    for key in ("probe_before", "probe_after"):
        if key in r:
            print(f"  {r['layout']:<22} SM probe {key[6:]} the load: " + ", ".join(
                f"{m} on plan {p['plan']}: {len(p['sms'])} SMs of {p['size']}" for m, p in r[key].items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=125.0, help="R: phase 1 a at R and b at 4R; phase 2 swapped")
    parser.add_argument("--factor", type=float, default=4.0, help="the high rate over the low one (4)")
    parser.add_argument("--phase-s", type=float, default=30.0, help="seconds per phase")
    parser.add_argument("--window-s", type=float, default=1.0, help="measurement window (s)")
    parser.add_argument("--settle-s", type=float, default=1.0, help="settling time excluded from each phase's figures")
    parser.add_argument("--program-a", default="triton_aggressor", help="test program of model a")
    parser.add_argument("--program-b", default="triton_aggressor", help="test program of model b")
    parser.add_argument("--layouts", default="static,whole,controller")
    parser.add_argument("--schedule", choices=("intervals", "phases"), default="intervals",
                        help="one perf_analyzer per model over both phases (--request-intervals), or per phase")
    parser.add_argument("--target-a-us", type=float, default=0.0, help="a's p99 target (0: chosen from the curves)")
    parser.add_argument("--target-b-us", type=float, default=0.0, help="b's p99 target (0: chosen from the curves)")
    parser.add_argument("--target-margin", type=float, default=1.5, help="chosen target over the predicted p99")
    parser.add_argument("--cal-rates", default="0.5,1,2,3,4,5", help="calibration rates, multiples of R")
    parser.add_argument("--cal-s", type=float, default=3.0, help="seconds per calibration point")
    parser.add_argument("--curves", help="the curves from a file instead of calibrating: "
                        '{"a": {"<sms>": [[rate, p99_us], ...]}, "b": {...}}')
    parser.add_argument("--warmup-s", type=float, default=2.0,
                        help="seconds of calls at the lowest calibration rate before each measurement, not measured")
    parser.add_argument("--slo-interval-ms", type=int, default=100)
    parser.add_argument("--slo-window-s", type=float, default=0.5)
    parser.add_argument("--no-goal", dest="goal", action="store_false", help="report the goal, do not fail on it")
    parser.add_argument("--json", help="write everything here")
    parser.add_argument("--work", help="keep perf_analyzer's files and the traces here (default: a temporary directory)")
    args = parser.parse_args()
    import harness  # here, as in the functions that start servers: the logic tests import this file without it
    harness.stop_on_sigterm()  # Note [a bench stopped by its timeout] (harness.py)
    args.cal_rates = [float(x) for x in args.cal_rates.split(",") if x]
    layouts = [x for x in args.layouts.split(",") if x]

    gpu = harness.gpu_plan_fields()
    work = args.work or tempfile.mkdtemp(prefix="trtet-shift-")
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()
    small, large = plan_sizes(gpu)
    plans = make_plans(small, large)
    phases = phase_rates(args.rate, args.factor)
    result = {"gpu": gpu, "plans": plans, "phases": phases, "layouts": []}
    failures = []
    print(f"{gpu['name']} ({gpu['sm_count']} SMs; one split {gpu['max_partitioned_sms']}): plans "
          f"{', '.join(n for n, _ in plans)}; phase 1 a {phases[0]['a']:g}/s b {phases[0]['b']:g}/s, phase 2 swapped; "
          f"{args.phase_s:g} s each", flush=True)
    programs = {"a": args.program_a, "b": args.program_b}
    if args.curves:
        curves = load_curves(args.curves)
        result["curves_from"] = args.curves
    else:
        print("calibration:", flush=True)
        points = calibrate(args, programs, (small, large), gpu, work)
        result["calibration"] = points
        curves = {m: {sms: curve_from_points(points[programs[m]][sms]) for sms in (small, large)} for m in MODELS}
        result["curves_from"] = "measured (calibration)"
    result["curves"] = {m: {str(k): v for k, v in c.items()} for m, c in curves.items()}
    try:
        targets = choose_targets(curves, plans, phases, args.target_margin,
                                 {"a": args.target_a_us, "b": args.target_b_us})
    except ValueError as e:
        failures.append(f"targets: {e}")
        targets = None
    if targets:
        result["targets"] = targets
        result["predicted"] = predicted_table(curves, plans, phases)
        result["predicted_met"] = plans_meeting(curves, plans, phases, targets)
        if any(all(v) for v in result["predicted_met"].values()):
            failures.append(f"targets {targets}: a single plan meets both phases on the curves "
                            f"({result['predicted_met']}): the shift shows nothing")
        for i in range(len(phases)):
            if not result["predicted_met"][plans[i][0]][i]:
                failures.append(f"phase {i + 1}: its own plan {plans[i][0]} misses a target on the curves")
        for m in MODELS:
            for sms in (small, large):
                if not curves[m].get(sms):
                    failures.append(f"model {m} has no curve on {sms} SMs (no calibration rate sustained)")
    if targets and not any(f.startswith("model ") for f in failures):
        set_path = os.path.join(work, "shift_set.json")
        with open(set_path, "w") as f:
            json.dump(harness.plan_set_dict([(n, [(m, sizes[m]) for m in MODELS], "",
                                              {m: curves[m][sizes[m]] for m in MODELS}) for n, sizes in plans],
                                            gpu=gpu), f)
        plan_info = {"sizes": {i: sizes for i, (_, sizes) in enumerate(plans)},
                     "names": {i: n for i, (n, _) in enumerate(plans)}}
        runs = []
        for layout in layouts:
            if layout == "static":
                for i, (plan_name, sizes) in enumerate(plans):
                    path = os.path.join(work, f"static-{plan_name}.json")
                    harness.write_plan(path, [(m, sizes[m]) for m in MODELS], gpu=gpu)
                    runs.append((f"static {plan_name}", {m: {"plan_file": path} for m in MODELS},
                                 {"sizes": {None: sizes}, "names": {None: plan_name}}))
            elif layout == "whole":
                runs.append(("whole", {m: {} for m in MODELS}, None))
            elif layout == "controller":
                control = {"plan_set_file": set_path, "slo_interval_ms": str(args.slo_interval_ms),
                           "slo_window_s": f"{args.slo_window_s:g}"}
                runs.append(("controller", {m: dict(control, slo_p99_us=str(int(targets[m]))) for m in MODELS},
                             plan_info))
            else:
                failures.append(f"unknown layout {layout}")
        for name, params, info in runs:
            print(f"{name}:", flush=True)
            try:
                r = run_layout(name, params, args, phases, targets, work, info)
            except Exception as e:  # one layout's failure is reported; the others still run
                r = {"layout": name, "error": str(e)[-3000:], "problems": []}
                print(f"  {name} FAILED: {r['error']}", flush=True)
            result["layouts"].append(r)
            if "error" in r:
                failures.append(f"{name}: {r['error'][-500:]}")
            failures += [f"{name}: {p}" for p in r["problems"]]
    result["seconds"] = time.monotonic() - t0

    # The goal.
    goal = None
    done = [r for r in result["layouts"] if "phases" in r and len(r["phases"]) == len(phases)]
    statics = [r for r in done if r["layout"].startswith("static ")]
    best = min(statics, key=lambda r: worst_ratio(r, targets)) if statics else None
    controller = next((r for r in done if r["layout"] == "controller"), None)
    if best is not None and controller is not None:
        ctl_ok = all(x["met"] for p in controller["phases"] for x in p["models"].values())
        # Settled: every model on the plan it ends the phase on from --settle-s into the phase (the plan
        # gauge per window). The latency side is ctl_ok: each phase's p99 after --settle-s meets its
        # target. Every single window's p99 (settling_s) is printed beside it, a diagnostic (docs/SERVING.md,
        # "How settling is judged").
        settled = all(p.get("plan_settling_s") is not None and p["plan_settling_s"] <= args.settle_s
                      for p in controller["phases"])
        static_misses = any(not all(x["met"] for x in p["models"].values()) for p in best["phases"])
        goal = {"controller_meets_every_target": ctl_ok, "controller_plan_settled_within_s": settled,
                "best_static": best["layout"], "best_static_misses_a_phase": static_misses,
                "met": ctl_ok and settled and static_misses}
        result["goal"] = goal
        if args.goal and not goal["met"]:
            failures.append(f"goal not met: {goal}")
    elif args.goal and {"static", "controller"} <= set(layouts):
        failures.append("goal not judged: a static or the controller run did not finish")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=str)

    print("\n== shift bench summary ==")
    plan_text = ", ".join("%s (a %d, b %d SMs)" % (n, s["a"], s["b"]) for n, s in plans)
    print(f"plans {plan_text}; curves "
          f"{result['curves_from']}: " + "; ".join(
              f"{m} on {sms}: " + " ".join(f"{r:g}/s {p:.0f}us" for r, p in c) for m, cs in curves.items()
              for sms, c in sorted(cs.items())))
    if targets:
        print(f"targets (p99 of queue + compute, Triton's traces): a {targets['a']:.0f} us, b {targets['b']:.0f} us; "
              f"met on the curves per plan and phase: {result['predicted_met']}")
    for r in result["layouts"]:
        print_layout(r, targets, args.window_s)
    if best is not None:
        print(f"(a) best static plan: {best['layout'][7:]} (each plan of the set run statically; the lowest worst "
              f"p99 / target: {worst_ratio(best, targets):.2f})")
    if goal:
        print(f"goal: the controller meets every target in both phases: {goal['controller_meets_every_target']}, "
              f"on its final plan within {args.settle_s:g} s of each shift: {goal['controller_plan_settled_within_s']}; the best "
              f"static plan ({goal['best_static'][7:]}) misses a phase: {goal['best_static_misses_a_phase']} -> "
              f"{'MET' if goal['met'] else 'NOT MET'}")
    print(f"shift bench on {gpu['name']}: rate {args.rate:g}/s x {args.factor:g}, {args.phase_s:g} s phases, "
          f"{args.window_s:g} s windows, schedule {args.schedule}, {result['seconds']:.0f} s")
    print("shift bench: " + ("FAILED: " + "; ".join(failures)[:1500] if failures else "all checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
