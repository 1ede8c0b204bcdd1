#!/usr/bin/env python3
"""Plots trtet-plan's plan (--csv PREFIX: PREFIX_curves.csv and PREFIX_verify.csv) with matplotlib.

    tools/plot_plan.py run_curves.csv run_verify.csv [plan.png] [--title TEXT]

One panel per model: its p50 and p99 latency alone against the partition's SM count, its p99
target (dotted), the partition the plan gives it (circle: p99 alone there) and its p99 beside the
other models on that partition (star, from the last side-by-side round; earlier rounds as small
crosses). A last panel: per model, target, p99 alone and p99 beside, side by side, the SMs under
each group. The output format follows the file's extension (.png, .svg, .pdf).
Exit status: 0 plotted; 1 bad arguments or CSV; 3 matplotlib is not installed (it says so).
"""
import argparse
import csv
import math
import sys

from plotting import pyplot, save

CURVE_COLUMNS = {"model", "sms", "p50_us", "p99_us", "p99_target_us"}
VERIFY_COLUMNS = {"round", "model", "sms", "p99_target_us", "p99_alone_us", "p99_beside_us", "meets"}


def read_rows(path, required, what):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or not required <= set(rows[0]):
        raise ValueError(f"{path}: not a trtet-plan {what} CSV (needs columns {sorted(required)})")
    return rows


def read_curves(path):
    models = {}
    for row in read_rows(path, CURVE_COLUMNS, "curves"):
        m = models.setdefault(row["model"], {"target": float(row["p99_target_us"]), "points": []})
        m["points"].append((int(row["sms"]), float(row["p50_us"]), float(row["p99_us"])))
    for m in models.values():
        m["points"].sort()
    return models


def read_verify(path):
    rounds = []
    for row in read_rows(path, VERIFY_COLUMNS, "verification"):
        rounds.append({
            "round": int(row["round"]), "model": row["model"], "sms": int(row["sms"]),
            "target": float(row["p99_target_us"]), "alone": float(row["p99_alone_us"]),
            "beside": float(row["p99_beside_us"]), "meets": row["meets"] == "1",
        })
    return rounds


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("curves", help="PREFIX_curves.csv from trtet-plan --csv PREFIX")
    parser.add_argument("verify", help="PREFIX_verify.csv from trtet-plan --csv PREFIX (may have no rows past "
                                       "its header where no plan could be verified)")
    parser.add_argument("out", nargs="?", help="the image to write (default: plan.png)")
    parser.add_argument("--title", default="trtet-plan: partitions for models side by side")
    args = parser.parse_args(argv)
    out = args.out or "plan.png"
    try:
        models = read_curves(args.curves)
        try:
            verify = read_verify(args.verify)
        except ValueError:
            with open(args.verify, newline="") as f:
                header = f.readline().strip().split(",")
            if not VERIFY_COLUMNS <= set(header):
                raise
            verify = []  # the header alone: no plan was verified
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_plan: {e}", file=sys.stderr)
        return 1
    plt = pyplot("plot_plan")
    if plt is None:
        return 3
    from matplotlib.ticker import ScalarFormatter

    last_round = max((v["round"] for v in verify), default=0)
    last = {v["model"]: v for v in verify if v["round"] == last_round}
    panels = len(models) + (1 if last else 0)
    cols = 2 if panels > 1 else 1
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.0 * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, (name, m) in zip(flat, models.items()):
        sms = [p[0] for p in m["points"]]
        ax.plot(sms, [p[1] for p in m["points"]], "o-", markersize=3, label="p50 alone")
        ax.plot(sms, [p[2] for p in m["points"]], "^-", markersize=4, label="p99 alone")
        ax.axhline(m["target"], color="red", linestyle=":", label=f"p99 target: {m['target']:g} us")
        earlier = [v for v in verify if v["model"] == name and v["round"] != last_round]
        for i, v in enumerate(earlier):
            ax.plot([v["sms"]], [v["beside"]], "x", color="gray", markersize=6,
                    label="p99 beside, an earlier round" if i == 0 else None)
        if name in last:
            v = last[name]
            ax.plot([v["sms"]], [v["alone"]], "o", color="green", markersize=12, fillstyle="none",
                    label=f"planned: {v['sms']} SMs")
            ax.plot([v["sms"]], [v["beside"]], "*", color="green" if v["meets"] else "red", markersize=13,
                    label=f"p99 beside the others: {v['beside']:.1f} us")
        ax.set_title(name)
        ax.set_xlabel("SMs in the partition")
        ax.set_ylabel("latency per call (us)")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.set_xticks(sms)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if last:
        ax = flat[len(models)]
        names = list(last)
        width = 0.27
        xs = range(len(names))
        for k, (key, label, color) in enumerate((("target", "p99 target", "lightgray"),
                                                 ("alone", "p99 alone on its partition", "tab:blue"),
                                                 ("beside", "p99 beside the others", "tab:green"))):
            ax.bar([x + (k - 1) * width for x in xs], [last[n][key] for n in names], width, label=label, color=color)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{n}\n{last[n]['sms']} SMs" for n in names], fontsize=8)
        ax.set_ylabel("p99 latency (us)")
        ax.set_title(f"side by side, round {last_round}: "
                     + ("every target met" if all(v["meets"] for v in last.values()) else "a target missed"))
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in flat[panels:]:
        ax.axis("off")
    fig.suptitle(args.title)
    save(fig, out, "plot_plan")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
