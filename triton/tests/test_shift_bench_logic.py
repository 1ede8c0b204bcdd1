"""shift_bench.py's pure parts, on any machine (no server, no GPU): the schedule, perf_analyzer's CSV,
windows and settling, curves and predictions, the choice of targets, the metrics and log lines."""

import math

import pytest

import shift_bench as sb


def test_percentile_is_numpys_linear_one():
    assert sb.percentile([], 99) != sb.percentile([], 99)  # nan
    assert sb.percentile([5], 99) == 5
    assert sb.percentile(list(range(1, 101)), 50) == pytest.approx(50.5)
    assert sb.percentile(list(range(1, 101)), 99) == pytest.approx(99.01)


def test_phases_swap_the_rates():
    assert sb.phase_rates(125) == [{"a": 125, "b": 500}, {"a": 500, "b": 125}]


def test_plan_sizes_fill_one_split_on_the_granularity():
    h200 = {"sm_count": 132, "min_partition": 8, "alignment": 8, "granularity": 8, "max_partitioned_sms": 120}
    assert sb.plan_sizes(h200) == (40, 80)
    assert sb.plan_sizes(dict(h200, max_partitioned_sms=124)) == (40, 80)  # 120 on the granularity
    assert sb.make_plans(40, 80) == [("a40-b80", {"a": 40, "b": 80}), ("a80-b40", {"a": 80, "b": 40})]
    with pytest.raises(ValueError):
        sb.plan_sizes(dict(h200, max_partitioned_sms=16))


def test_intervals_keep_constant_spacing_per_phase():
    iv = sb.intervals_us(sb.phase_rates(125), 2, "a")
    assert iv == [8000] * 250 + [2000] * 1000
    assert sum(iv) == 4_000_000
    assert sb.intervals_us(sb.phase_rates(125), 2, "b") == [2000] * 1000 + [8000] * 250


def test_perf_analyzer_csv():
    text = ("Concurrency,Inferences/Second,Client Send,p50 latency,p90 latency,p95 latency,p99 latency\n"
            "0,499.8,12,1500,1900,2100,2600\n")
    figures = sb.pa_figures(sb.parse_pa_csv(text))
    assert figures["throughput"] == 499.8 and figures["client_p99_us"] == 2600 and figures["client_p50_us"] == 1500
    assert math.isnan(sb.pa_figures({"Inferences/Second": ""})["throughput"])
    with pytest.raises(ValueError):
        sb.parse_pa_csv("Concurrency,Inferences/Second\n")


def test_request_times_from_traces():
    traces = {1: {"model": "a", "REQUEST_START": 10, "QUEUE_START": 20, "COMPUTE_END": 3020},
              2: {"model": "a", "REQUEST_START": 5, "QUEUE_START": 6, "COMPUTE_END": 1006},
              3: {"model": "b", "REQUEST_START": 7},  # incomplete: left out
              4: {"REQUEST_START": 1, "QUEUE_START": 1, "COMPUTE_END": 2}}  # no model
    assert sb.request_times(traces) == {"a": [(5, 1.0), (10, 3.0)]}


def test_windows_and_settling():
    s = 1_000_000_000
    samples = [(0, 100.0), (s // 2, 900.0), (s + 1, 100.0), (2 * s, 150.0), (3 * s + 5, 99.0), (-1, 5.0)]
    w = sb.windows_of(samples, 0, 1.0, 3)
    assert [x["n"] for x in w] == [2, 1, 1]  # the sample past the last window and the one before are out
    assert w[0]["p99_us"] == pytest.approx(100 + 800 * 0.99)
    targets = {"a": 200.0}
    assert [sb.window_met({"a": w}, targets, k) for k in range(3)] == [False, True, True]
    assert sb.settling_windows([False, True, True]) == 1
    assert sb.settling_windows([True, True]) == 0
    assert sb.settling_windows([False, True, False, True]) == 3
    assert sb.settling_windows([True, False]) is None
    assert sb.settling_windows([]) is None
    empty = [{"n": 0, "calls_per_s": 0, "p99_us": float("nan")}]
    assert sb.window_met({"a": empty}, targets, 0)  # no call: met


def test_phase_summary_splits_off_the_settling_time():
    s = 1_000_000_000
    samples = [(k * s // 10, 1000.0 if k < 10 else 100.0) for k in range(40)]  # 4 s at 10/s
    steady, early = sb.phase_summary(samples, 0, 4.0, 1.0)
    assert steady == {"n": 30, "p99_us": 100.0, "calls_per_s": 10.0}
    assert early["n"] == 10 and early["p99_us"] == 1000.0


def test_curves_end_at_the_first_rate_not_sustained():
    points = [{"rate": 250, "throughput": 249, "p99_us": 3000}, {"rate": 62.5, "throughput": 62.5, "p99_us": 2700},
              {"rate": 500, "throughput": 380, "p99_us": 90000}, {"rate": 625, "throughput": 624, "p99_us": 1e5}]
    assert sb.curve_from_points(points) == [(62.5, 2700), (250, 3000)]
    assert sb.curve_from_points([{"rate": 1, "throughput": 1, "p99_us": float("nan")}]) == []


def test_predictions_as_the_controller_makes_them():
    curve = [(100.0, 1000.0), (300.0, 3000.0)]
    assert sb.predict(curve, 50) == 1000
    assert sb.predict(curve, 200) == pytest.approx(2000)
    assert sb.predict(curve, 300) == 3000
    assert sb.predict(curve, 301) is None
    assert sb.predict([], 1) is None and sb.predict(None, 1) is None


# Curves like the aggressor's on the H200: ~2.6 ms on 40 SMs up to about 385 calls/s, ~1.3 ms on 80.
SMALL = [(62.5, 2700.0), (125.0, 2900.0), (250.0, 3600.0), (375.0, 6000.0)]
LARGE = [(62.5, 1350.0), (125.0, 1400.0), (250.0, 1500.0), (375.0, 1700.0), (500.0, 2100.0), (625.0, 3500.0)]
CURVES = {"a": {40: SMALL, 80: LARGE}, "b": {40: SMALL, 80: LARGE}}
PLANS = sb.make_plans(40, 80)
PHASES = sb.phase_rates(125)


def test_targets_separate_the_plans():
    targets = sb.choose_targets(CURVES, PLANS, PHASES, 1.5)
    # a: phase 1 on 40 SMs at 125 (2900), phase 2 on 80 at 500 (2100): 1.5 x 2900.
    assert targets == {"a": 4350.0, "b": 4350.0}
    met = sb.plans_meeting(CURVES, PLANS, PHASES, targets)
    assert met == {"a40-b80": [True, False], "a80-b40": [False, True]}
    table = sb.predicted_table(CURVES, PLANS, PHASES)
    assert table["a40-b80"][1]["a"] is None  # a at 500/s on 40 SMs: beyond the curve
    assert sb.choose_targets(CURVES, PLANS, PHASES, 1.5, {"a": 5000, "b": 0})["a"] == 5000.0


def test_targets_need_each_phase_own_plan_to_carry_it():
    with pytest.raises(ValueError, match="lower --rate"):
        sb.choose_targets(CURVES, PLANS, sb.phase_rates(200), 1.5)  # 800/s: beyond even 80 SMs


def test_metrics_and_switch_lines():
    text = ('# HELP trtet_plan_set_plan x\n'
            'trtet_plan_set_plan{gpu="0",model="a"} 1\n'
            'trtet_plan_set_plan{gpu="0",model="b"} 0\n'
            'trtet_plan_set_switches{gpu="0"} 3\n'
            'trtet_plan_set_planned{gpu="0"} 9\n')
    assert sb.parse_metric(text, "trtet_plan_set_plan") == [({"gpu": "0", "model": "a"}, 1.0),
                                                           ({"gpu": "0", "model": "b"}, 0.0)]
    assert sb.parse_metric(text, "trtet_plan_set_switches") == [({"gpu": "0"}, 3.0)]
    log = ("I1203 16:27:46.123456 77 plan_set_serving.cpp:120] plan set /r/set.json on GPU 0: switched to plan "
           "'a80-b40' (index 1): switch from plan \"a40-b80\" to \"a80-b40\": headroom 1.3\nother line\n")
    lines = sb.switch_lines(log)
    assert [(n, i) for n, i, _ in lines] == [("a80-b40", 1)]


def test_plan_settling_from_the_plan_per_window():
    assert sb.plan_settling_windows({"a": [0, 1, 1, 1], "b": [0, 1, 1, 1]}) == 1
    assert sb.plan_settling_windows({"a": [1, 1], "b": [1, 1]}) == 0
    assert sb.plan_settling_windows({"a": [0, 1, 1, 1], "b": [0, 0, 1, 1]}) == 2  # the later model counts
    assert sb.plan_settling_windows({"a": [0, 1, 0, 1]}) == 3  # a flap: final only from the last window
    assert sb.plan_settling_windows({"a": [None, 1, 1]}) == 1
    assert sb.plan_settling_windows({"a": [1, None]}) is None
    assert sb.plan_settling_windows({"a": []}) is None
    assert sb.plan_settling_windows({}) is None


def test_plan_per_window_from_the_metrics_timeline():
    s = 1_000_000_000
    timeline = [(s // 2, {"a": 0, "b": 0}), (int(1.5 * s), {"a": 1, "b": 1}), (int(3.5 * s), {"a": 0})]
    assert sb.plan_per_window(timeline, 0, 1.0, 4, "a") == [0, 1, 1, 0]
    assert sb.plan_per_window(timeline, 0, 1.0, 4, "b") == [0, 1, 1, 1]
    assert sb.plan_per_window([], 0, 1.0, 2, "a") == [None, None]


def test_worst_ratio_and_sm_checks():
    result = {"phases": [{"models": {"a": {"steady": {"p99_us": 2000.0}}, "b": {"steady": {"p99_us": 9000.0}}}},
                         {"models": {"a": {"steady": {"p99_us": float("nan")}}, "b": {"steady": {"p99_us": 1.0}}}}]}
    assert sb.worst_ratio(result, {"a": 4000.0, "b": 4500.0}) == float("inf")
    result["phases"].pop()
    assert sb.worst_ratio(result, {"a": 4000.0, "b": 4500.0}) == 2.0
    assert sb.sms_ok(list(range(40)), 40, list(range(40, 120))) == []
    assert "41 SMs on a partition of 40" in sb.sms_ok(list(range(41)), 40, None)[0]
    assert "shares SMs [39]" in sb.sms_ok(list(range(40)), 40, [39, 40])[0]
    assert sb.sms_ok([], 40, None) == ["no SMs recorded"]


def test_served_rate_counts_the_backlog():
    s = 1_000_000_000
    # 10 calls offered at 10/s, each done 1 ms after it starts: carried.
    carried = {k: {"model": "a", "REQUEST_START": k * s // 10, "COMPUTE_END": k * s // 10 + s // 1000} for k in range(10)}
    assert sb.served_rate(carried, "a", 0, s) == pytest.approx(10 / 0.901)
    # The same offered to a server that does 5/s: the last one done at 2 s.
    backlog = {k: {"model": "a", "REQUEST_START": k * s // 10, "COMPUTE_END": (k + 1) * s // 5} for k in range(10)}
    assert sb.served_rate(backlog, "a", 0, s) == pytest.approx(5.0)
    assert sb.served_rate(backlog, "b", 0, s) != sb.served_rate(backlog, "b", 0, s)  # nan: no request
    assert sb.served_rate(backlog, "a", 0, 0) != sb.served_rate(backlog, "a", 0, 0)  # one request
