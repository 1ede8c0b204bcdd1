"""The perf bench's goals over several runs, from each run's JSON (perf_bench.py --json; scripts/gpu-triton
writes it as perf_bench.json). For every layout, protocol and I/O: each run's reading of the client's
and the server's p99 ratio beside ÷ alone (perf_bench's: one p99 over every request of the run's
windows beside ÷ one over those alone, Note [one p99 per side]; a run without per-request times, as
before S51, gives the median of its pairs' ratios, marked *) and, where the run had control windows,
the control's ratio alone ÷ alone; how many runs kept each goal; and per run the client's p50, p99
and p99.9 alone -> beside, both models' calls/s, compute input + infer + output alone, how far the
run's windows alone lie apart, how many of its windows the hypervisor took 0.2 % or more of all cores' time from
(Note [a window the hypervisor took from]), what moved in the latency model's own time beside the
aggressor (the backend's phases: execute, the stream's wait, the engine's GPU time, the send; Note [what
moved beside the aggressor]), and each layout's device memory. The line before the last counts the
per-request goals over the partitioned rows (Note [the per-request goals]); the last line is the
verdict for the partitioned layout, the goal "in every run":

  python3 perf_runs.py out1/perf_bench.json out2/perf_bench.json out3/perf_bench.json

  per request (partitioned, alone): compute in+infer+out <= the goal in 0 of 12 readings, less the send in 11 of 12
  perf runs: 3 runs; partitioned: client <= 1.10 in 9 of 12 readings, server <= 1.05 in 8 of 12 readings; in
  every run: not met

(S64's three runs, on an H100.)

A run without a row of a layout it asked for (the layout failed, or stopped before that row) counts as
a reading not kept: a goal "in every run" is not met by a run that did not measure it. A run that did
not ask for a layout at all (perf_bench.py --layouts without it: a session short of device time makes
the partitioned layout's runs first and the others after, docs/SERVING.md, "How the next runs are
read") is not one of that layout's runs: its cells read "(not asked)", and the counts and the verdict
are over the runs that asked. A run stopped by a signal may not have reached a layout it asked for,
so such a run counts as having asked for every layout. Exit status 1 when a file cannot be read or
holds no perf bench result; the verdict itself does not set it.
"""

import argparse
import json
import sys

import perf_bench

GOALS = (("client", "client_reading", 1.10), ("server", "server_reading", 1.05))


def rows_of(results):
    """{(layout, protocol, io): perf_bench's row} of one run."""
    rows, _ = perf_bench.summarize(results, argparse.Namespace(bound=0.0))
    return {(r["layout"], r["protocol"], r["io"]): r for r in rows}


def read_run(path):
    with open(path) as f:
        results = json.load(f)
    if not isinstance(results, list) or not all(isinstance(r, dict) and "layout" in r for r in results):
        raise ValueError(f"{path}: not a perf bench result (a list of layouts)")
    return results


def reading(run, key, field):
    """A run's reading of `field` for a row; nan where the run has no such row."""
    return run[key][field] if key in run else float("nan")


def kept(values, goal):
    """How many readings keep a goal (a missing one, nan, does not)."""
    return sum(1 for v in values if v == v and v <= goal)


def asked_for(results, layout):
    """Whether a run (its perf bench result) asked for `layout`: it has an entry for it, or it was stopped
    by a signal before every layout it asked for had run (perf_bench.py appends no entry for those)."""
    return any(r.get("layout") == layout or r.get("terminated") for r in results)


def layout_rows(runs, layout, asked=None):
    """(the row keys of `layout` in perf_bench's order, the runs that asked for it: `asked`, one flag per
    run, all when None)."""
    keys = [(layout, p, io) for p in perf_bench.PROTOCOLS for io in perf_bench.IOS]
    asked = [True] * len(runs) if asked is None else asked
    return keys, [run for run, a in zip(runs, asked) if a]


def verdict(runs, layout="partitioned", goals=GOALS, asked=None):
    """(text, met) for `layout` over the rows of the runs that asked for it (`asked`, one flag per run;
    all when None): a reading per run and (protocol, I/O). Met only where at least one run asked."""
    keys, runs_asked = layout_rows(runs, layout, asked)
    parts, met = [], bool(runs_asked)
    for name, field, goal in goals:
        readings = [reading(run, k, field) for run in runs_asked for k in keys]
        count = kept(readings, goal)
        met = met and count == len(readings)
        parts.append(f"{name} <= {goal:.2f} in {count} of {len(readings)} readings")
    text = f"{layout}: " + ", ".join(parts)
    if len(runs_asked) < len(runs):
        text += f" (the {len(runs_asked)} run{'s' if len(runs_asked) != 1 else ''} that asked for it)"
    return text, met


# Note [what moved beside the aggressor]
# --------------------------------------
# With the host's wake-ups out of the way (the cores kept awake, S61) the latency model's p99 alone is
# 60 to 110 us at the server, and the 5 % of the goal is 3 to 5 us. The backend's phases
# (trtet_request_phase_duration_us, per window alone and beside in perf_bench.json) say where such a
# difference lies: in `execute`, which with CUDA shared memory is host work only (the program, the
# delegate's call, the engine's launch: the GPU cannot be behind it) and with host I/O also waits for
# the staged copies, in the stream's wait, or in the engine's own GPU time (CUDA events around the
# engine on one request in 16). On S61's H100 the partitioned rows moved in `execute`: +1.1 to +3.6 us
# with CUDA shm (16 to 56 % of it), +2.3 to +5.7 with host I/O (the copies' GPU time within 1 us), and
# under MPS, separate processes, by +0.3 to +4.9, while the engine's GPU time moved by -4.5 to +2.5:
# the aggressor's host work slows the latency model's host path, which no partition of the GPU can
# hold.
PHASES_MOVED = (("execute", "execute"), ("wait", "stream_wait"), ("engine GPU", "trtet_engine_gpu_duration_us"),
                ("send", "send"))


def phase_means(row, side):
    """{phase: mean over the row's pairs} of one side, over the windows that recorded phases ({} if none)."""
    phases = [w[side].get("phases_us") for w in row["windows"] if w.get(side) and w[side].get("phases_us")]
    if not phases:
        return {}
    keys = set.intersection(*(set(p) for p in phases))
    return {key: sum(p[key] for p in phases) / len(phases) for key in keys}


def moved_text(row):
    alone, beside = phase_means(row, "alone"), phase_means(row, "beside")
    parts = [f"{name} {alone[key]:.1f}->{beside[key]:.1f}" for name, key in PHASES_MOVED
             if key in alone and key in beside]
    med = row["med"]
    parts.append(f"compute p99 {med('alone', 'compute_p99_us'):.0f}->{med('beside', 'compute_p99_us'):.0f}"
                 f" queue p99 {med('alone', 'queue_p99_us'):.0f}->{med('beside', 'queue_p99_us'):.0f}")
    return " ".join(parts)


def moved_summary(rows):
    """The range over `rows` of what beside - alone added to execute and to the engine's GPU time."""
    out = []
    for name, key in (("execute", "execute"), ("engine GPU", "trtet_engine_gpu_duration_us")):
        deltas = []
        for row in rows:
            alone, beside = phase_means(row, "alone"), phase_means(row, "beside")
            if key in alone and key in beside:
                deltas.append(beside[key] - alone[key])
        if deltas:
            out.append(f"{name} beside - alone {min(deltas):+.1f} to {max(deltas):+.1f} us over {len(deltas)} rows")
    return "; ".join(out) or "no phases recorded"


# Note [the per-request goals]
# ----------------------------
# The per-request goals are for the latency model alone: compute input + infer + output
# (Triton's own server-side figures, as perf_analyzer reports them) of at most 60 us with host I/O and
# 45 us with CUDA shared memory. This backend sends each response in the instance's thread by default
# and takes the end of execution after the send, so Triton's compute output holds the send; Triton's
# ONNX Runtime backend takes it before the send, so its figure leaves the send out. Both readings are
# given, one per partitioned row and run: the figure as Triton reports it, and that figure less the
# backend's `send` phase (trtet_request_phase_duration_us, the same requests' mean). A run without
# phases has only the first; a missing row keeps neither.
PER_REQUEST_GOALS_US = {"host": 60.0, "cuda": 45.0}


def per_request(row):
    """(compute in + infer + out alone, the same less the send, or nan where no phases) of a row, in us."""
    compute = row["med"]("alone", "compute_us")
    send = phase_means(row, "alone").get("send", float("nan"))
    return compute, compute - send


def per_request_verdict(runs, asked=None, layout="partitioned"):
    """The per-request goals over the runs that asked for `layout` (Note [the per-request goals])."""
    keys, runs_asked = layout_rows(runs, layout, asked)
    nan = float("nan")
    readings = [(per_request(run[k]) if k in run else (nan, nan), PER_REQUEST_GOALS_US[k[2]])
                for run in runs_asked for k in keys]
    counts = [sum(1 for values, goal in readings if values[j] == values[j] and values[j] <= goal) for j in (0, 1)]
    return (f"per request ({layout}, alone): compute in+infer+out <= the goal in {counts[0]} of {len(readings)} "
            f"readings, less the send in {counts[1]} of {len(readings)}")


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+", help="each run's perf_bench.json")
    args = parser.parse_args(argv)
    try:
        results = [read_run(path) for path in args.runs]
        runs = [rows_of(r) for r in results]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"perf runs: cannot read the runs: {e}")
        return 1
    layouts = ("partitioned", "whole", "mps")  # perf_bench's order, then any other

    def order(k):
        return (layouts.index(k[0]) if k[0] in layouts else len(layouts), k[0], perf_bench.PROTOCOLS.index(k[1]),
                perf_bench.IOS.index(k[2]))
    keys = sorted({k for run in runs for k in run}, key=order)
    n = len(runs)
    asked = {layout: [asked_for(r, layout) for r in results] for layout in {k[0] for k in keys} | {"partitioned"}}
    print("client (server) p99 ratio beside / alone per run: the run's reading, one p99 over every request of its "
          "windows beside / one over those alone (perf_bench.py, Note [one p99 per side]; * where the run has no "
          "per-request times: the median of its pairs' ratios); [control: alone again / alone, median over the pairs]")
    print(f"{'layout':<12}{'proto':<6}{'I/O':<5}" + "".join(f"{'run ' + str(i + 1):>24}" for i in range(n))
          + f"{'client <= 1.10':>16}{'server <= 1.05':>16}")
    for k in keys:
        cells, counts = [], []
        for run, run_asked in zip(runs, asked[k[0]]):
            row = run.get(k)
            if row is None:
                cells.append("(not run)" if run_asked else "(not asked)")
                continue
            text = perf_bench.reading_text(row)
            if row["control_client_ratio"]:
                text += f" [{perf_bench.ratios_text([perf_bench.median_of(row['control_client_ratio'])])}]"
            cells.append(text)
        for _, field, goal in GOALS:
            values = [reading(run, k, field) for run, run_asked in zip(runs, asked[k[0]]) if run_asked]
            counts.append(f"{kept(values, goal)} of {len(values)}")
        print(f"{k[0]:<12}{k[1]:<6}{k[2]:<5}" + "".join(f"{c:>24}" for c in cells) + "".join(f"{c:>16}" for c in counts))
    print("\nper run: client p50 / p99 / p99.9 alone -> beside (us, medians over the pairs), latency calls/s alone / "
          "beside, aggressor calls/s, compute in+infer+out alone (us); the spread of the windows alone (max / min p99, "
          "client / server); the pooled p99s alone -> beside (us) behind the run's readings; the windows where perf_analyzer "
          "fell behind the rate, kept and run again; the windows run again where the hypervisor took its limit or more")
    for i, run in enumerate(runs):
        for k in keys:
            row = run.get(k)
            if row is None:
                continue
            med = row["med"]
            print(f"  run {i + 1} {k[0]:<12}{k[1]:<5}{k[2]:<5}"
                  + " ".join(f"{med('alone', q):.0f}->{med('beside', q):.0f}" for q in ("p50_us", "p99_us", "p999_us"))
                  + f"  {perf_bench.latency_calls_per_s(med, 'alone'):.0f}/{perf_bench.latency_calls_per_s(med, 'beside'):.0f}"
                  + f"  {row['aggressor']:.0f}"
                  + f"  {med('alone', 'compute_us'):.0f}"
                  + f"  spread {perf_bench.ratios_text([row['client_alone_spread']])} / {perf_bench.ratios_text([row['server_alone_spread']])}"
                  + "".join(f"  {name} pooled p99 {p['alone_p99_us']:.0f}->{p['beside_p99_us']:.0f}"
                            for name in ("client", "server") for p in [row[f"{name}_pooled"]] if p)
                  # Note [a window the load generator fell behind in] (perf_bench.py)
                  + (f"  fell behind: {row['delayed']} window(s) kept, {row.get('ran_again', 0)} run again"
                     if row["delayed"] or row.get("ran_again") else "")
                  # Note [a window the hypervisor took from] (perf_bench.py)
                  + (f"  stolen from: {row['stolen_again']} window(s) run again" if row.get("stolen_again") else ""))
    moved = [(i, k, run[k]) for i, run in enumerate(runs) for k in keys
             if run.get(k) is not None and phase_means(run[k], "alone")]
    if moved:  # Note [what moved beside the aggressor]
        print("\nper run: what moved in the latency model's own time beside the aggressor, means over the pairs in us "
              "alone -> beside: the backend's execute (its host path to the engine's launch), the stream's wait, the "
              "engine's GPU time (the timed requests), Triton's send; then the p99s of compute and of the queue "
              "(traces)")
        for i, k, row in moved:
            print(f"  run {i + 1} {k[0]:<12}{k[1]:<5}{k[2]:<5}" + moved_text(row))
        for layout in dict.fromkeys(k[0] for _, k, _ in moved):
            print(f"  {layout}: " + moved_summary([row for _, k, row in moved if k[0] == layout]))
    late = [(i, k, run[k]) for i, run in enumerate(runs) for k in keys
            if run.get(k) is not None and any(k2 in w[side] for w in run[k]["windows"] for side in ("alone", "beside")
                                              for k2 in ("sent_late_p99_us", "received_late_p99_us", "steal_percent"))]
    if late:  # Note [late at the client or on the way], Note [time the hypervisor took] (perf_bench.py)
        print("\nper run: how late the latency model's requests came against the rate's schedule, p99 in us alone -> "
              "beside (medians over the pairs), when perf_analyzer sent them and when the server received them; the "
              "steal over the windows, percent of all cores' time and of the core it took most from")
        for i, k, row in late:
            med = row["med"]
            print(f"  run {i + 1} {k[0]:<12}{k[1]:<5}{k[2]:<5}"
                  + " | ".join(f"{where} {med('alone', f'{where}_late_p99_us'):.0f}->{med('beside', f'{where}_late_p99_us'):.0f}"
                               for where in ("sent", "received"))
                  + " | steal " + " ".join(f"{med('alone', q):.2f}->{med('beside', q):.2f}"
                                           for q in ("steal_percent", "steal_core_percent")))
    stolen = [(i, [side for r in run_results for w in r.get("windows", []) for side in perf_bench.sides(w)])
              for i, run_results in enumerate(results)]
    if any("steal_percent" in side for _, ss in stolen for side in ss):  # runs before S58 have no steal
        limit = perf_bench.STEAL_RERUN_PERCENT  # Note [a window the hypervisor took from] (perf_bench.py)
        print(f"\nper run: the measured windows kept (every layout, alone and beside, the controls included) at or "
              f"above {limit:g} % steal (of all cores' time), and those perf_analyzer fell behind the rate in with "
              f"their steal (%)")
        for i, ss in stolen:
            high = sum(1 for side in ss if side.get("steal_percent", 0.0) >= limit)
            behind = sorted(side.get("steal_percent", float("nan")) for side in ss if side.get("delayed"))
            print(f"  run {i + 1}: {high} of {len(ss)} at or above {limit:g} % steal; fell behind in {len(behind)}"
                  + (f", steal {behind[0]:g} to {behind[-1]:g}" if behind else ""))
    settings = [next((r["host_settings"] for r in run_results if r.get("host_settings")), None) for run_results in results]
    if any(settings):  # runs before S59 do not record it
        print("\nper run: the host's idle states and cores kept awake (Notes [the host's idle states] and [the cores "
              "kept awake] in perf_bench.py)")
        for i, text in enumerate(settings):
            print(f"  run {i + 1}: {text or '(not recorded)'}")
    print("\nper run: device memory per layout, MiB used on the GPU with both models loaded (before them), and per "
          "server process")
    for i, run_results in enumerate(results):
        for r in run_results:
            m = r.get("device_memory_mib")
            if isinstance(m, dict) and "gpu_used_loaded" in m:
                per = ", ".join(f"{v}" for v in (m.get("servers") or {}).values())
                print(f"  run {i + 1} {r['layout']:<12}{m['gpu_used_loaded']} ({m.get('gpu_used_before')}); per server: {per}")
            else:
                print(f"  run {i + 1} {r['layout']:<12}(not measured{': ' + r['error'][-120:] if 'error' in r else ''})")
    looks = [(i, r) for i, run_results in enumerate(results) for r in run_results
             if r.get("host_before") or r.get("host_after_delayed")]
    if looks:  # Note [the host while it measures] (perf_bench.py); runs before S57 have none
        print("\nper run: the host before each layout's servers started, and right after windows perf_analyzer fell "
              "behind in")
        for i, r in looks:
            if r.get("host_before"):
                print(f"  run {i + 1} {r['layout']:<12}before: {perf_bench.host_look_text(r['host_before'])}")
            for look in r.get("host_after_delayed") or []:
                print(f"  run {i + 1} {r['layout']:<12}after {look.get('window', '?')}: {perf_bench.host_look_text(look)}")
    rows = [(i, k, run[k]) for i, run in enumerate(runs) for k in keys if k[0] == "partitioned" and k in run]
    if rows:  # Note [the per-request goals]
        print("\nper run: the latency model's compute input + infer + output alone, partitioned (us, Triton's figures, "
              "medians over the pairs), and the same less the backend's send (as Triton's ONNX Runtime backend "
              f"counts), against the goal ({PER_REQUEST_GOALS_US['host']:.0f} with host I/O, "
              f"{PER_REQUEST_GOALS_US['cuda']:.0f} with CUDA shm)")
        for i, k, row in rows:
            compute, less_send = per_request(row)
            print(f"  run {i + 1} {k[0]:<12}{k[1]:<5}{k[2]:<5}{compute:.0f}  less the send {less_send:.0f}"
                  f"  goal {PER_REQUEST_GOALS_US[k[2]]:.0f}")
    print(per_request_verdict(runs, asked=asked["partitioned"]))
    text, met = verdict(runs, asked=asked["partitioned"])
    print(f"perf runs: {n} run{'s' if n != 1 else ''}; {text}; in every run: {'met' if met else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
