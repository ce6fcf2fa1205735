#!/usr/bin/python3
"""Per-epoch test accuracy of two arms over seeds, paired by seed.

Reads the summary.json that entrograd-launch writes into each run's --out
(its "evals": one entry per evaluation, with the step, test and validation
accuracy) and prints the markdown tables of docs/BENCHMARKS.md "Six epochs
at 1000x" and "Nine epochs": for each evaluation step that every run of an
arm reached, the mean +- sample standard deviation over seeds, and the
difference B minus A per seed with its mean +- sd, then the bytes on the
wire of each run against the dense float32 exchange.

With --last_epochs N it also prints, per seed, the mean over the last N
epoch-end evaluations every run of the pair reached, and their paired
difference: a constant rate leaves accuracy moving by tenths of a point
from one epoch to the next, and one end point can land on either side of
a line that the epochs around it do not.

Runs are paired by position: the i-th --a run with the i-th --b run, which
must have the same seed (checked). A run that stopped early contributes
only the evaluations it reached; a row is printed where at least one run
of each arm has it, and its paired differences cover the seeds both have.

Example (the 9-epoch runs of docs/BENCHMARKS.md):
  /usr/bin/python3 bench/epoch_curves.py \\
      --a_label dense --a out/q9/dense_s1,out/q9/dense_s2,out/q9/dense_s3 \\
      --b_label "top-k gTop-k" --b out/q9/topk_s1,out/q9/topk_s2,out/q9/topk_s3
"""

import argparse
import json
import math
import os
import sys

from quality_study import mean_sd  # (mean, sample sd); sd NaN for one value


def load_run(path):
    """The run's summary.json as a dict, with its evals keyed by step."""
    summary_path = os.path.join(path, "summary.json")
    try:
        with open(summary_path) as f:
            summary = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"epoch_curves: cannot read {summary_path}: {error}")
    for key in ("seed", "evals", "steps", "epochs_completed"):
        if key not in summary:
            sys.exit(f"epoch_curves: {summary_path} has no \"{key}\"")
    summary["path"] = path
    summary["by_step"] = {e["step"]: e for e in summary["evals"]}
    return summary


def pm(values, scale, digits, unit="", signed=False):
    """mean ± sd; `signed` for differences, so a gain reads +0.12, not 0.12."""
    mean, sd = mean_sd([v * scale for v in values])
    sign = "+" if signed else ""
    if math.isnan(sd):  # a single value
        return f"{mean:{sign}.{digits}f}{unit} (1 seed)"
    return f"{mean:{sign}.{digits}f} ± {sd:.{digits}f}{unit}"


def steps_per_epoch(runs):
    """Steps in one epoch, the same for every run (else None: rows are then
    labelled by step alone)."""
    per_epoch = {r["steps"] // r["epochs_completed"]
                 for r in runs if r["epochs_completed"] > 0}
    return per_epoch.pop() if len(per_epoch) == 1 else None


def accuracy_rows(a_runs, b_runs, metric):
    """One dict per evaluation step: the step, each arm's values (None where
    a run did not reach it) and the paired differences b - a in pp."""
    steps = sorted(set().union(*(r["by_step"] for r in a_runs + b_runs)))
    rows = []
    for step in steps:
        a = [r["by_step"].get(step, {}).get(metric) for r in a_runs]
        b = [r["by_step"].get(step, {}).get(metric) for r in b_runs]
        if all(v is None for v in a) or all(v is None for v in b):
            continue
        diffs = [None if x is None or y is None else (y - x) * 100
                 for x, y in zip(a, b)]
        rows.append({"step": step, "a": a, "b": b, "diffs": diffs})
    return rows


def render(a_runs, b_runs, a_label, b_label, metric):
    name = metric.replace("_", " ")
    per_epoch = steps_per_epoch(a_runs + b_runs)
    seeds = ", ".join(str(r["seed"]) for r in a_runs)
    lines = [f"{name} (mean ± sd over seeds {seeds}; paired: {b_label} minus "
             f"{a_label} at the same seed, pp)", "",
             f"| epoch (step) | {a_label} | {b_label} | per seed (pp) | mean ± sd (pp) |",
             "|---:|---:|---:|---|---:|"]
    for row in accuracy_rows(a_runs, b_runs, metric):
        step = row["step"]
        if per_epoch and step % per_epoch == 0:
            where = f"{step // per_epoch} ({step})"
        else:
            where = f"({step})"
        a = [v for v in row["a"] if v is not None]
        b = [v for v in row["b"] if v is not None]
        paired = [d for d in row["diffs"] if d is not None]
        per_seed = ", ".join("-" if d is None else f"{d:+.2f}" for d in row["diffs"])
        lines.append(f"| {where} | {pm(a, 100, 2, '%')} | {pm(b, 100, 2, '%')} | "
                     f"{per_seed} | {pm(paired, 1, 2, signed=True) if paired else '-'} |")
    return "\n".join(lines)


def render_last_epochs(a_runs, b_runs, a_label, b_label, metric, count):
    """Per seed, each arm's mean over the last `count` epochs both runs of
    the pair reached (epoch-end evaluations only), and the mean of b - a."""
    per_epoch = steps_per_epoch(a_runs + b_runs)
    if per_epoch is None:
        return (f"(no --last_epochs table: the runs do not share one number "
                f"of steps per epoch)")
    a_means, b_means, diffs, epochs_used = [], [], [], set()
    for a, b in zip(a_runs, b_runs):
        common = sorted(step for step in set(a["by_step"]) & set(b["by_step"])
                        if step % per_epoch == 0)[-count:]
        if len(common) < count:
            return (f"(no --last_epochs table: seed {a['seed']} has {len(common)} "
                    f"epochs both arms reached, fewer than {count})")
        epochs_used.add((common[0] // per_epoch, common[-1] // per_epoch))
        a_mean = sum(a["by_step"][s][metric] for s in common) / count * 100
        b_mean = sum(b["by_step"][s][metric] for s in common) / count * 100
        a_means.append(a_mean)
        b_means.append(b_mean)
        diffs.append(b_mean - a_mean)
    first, last = epochs_used.pop() if len(epochs_used) == 1 else (None, None)
    span = f"epochs {first}-{last}" if first is not None else f"the last {count} epochs"
    name = metric.replace("_", " ")
    per_seed = ", ".join(f"{d:+.2f}" for d in diffs)
    return "\n".join([
        f"{name} averaged over {span}, per seed:", "",
        f"| {a_label} | {b_label} | {b_label} minus {a_label}, per seed (pp) | mean ± sd (pp) |",
        "|---:|---:|---|---:|",
        f"| {pm(a_means, 1, 2, '%')} | {pm(b_means, 1, 2, '%')} | {per_seed} | "
        f"{pm(diffs, 1, 2, signed=True)} |"])


def ratio_text(ratio):
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def render_bytes(runs, label):
    lines = []
    for r in runs:
        up = r.get("uplink_wire_bytes")
        down = r.get("downlink_wire_bytes")
        dense = r.get("dense_equivalent_bytes")
        if not up or not down or not dense:
            continue
        # dense_equivalent_bytes is the float32 exchange both ways; its
        # uplink is half of it.
        lines.append(f"- {label}, seed {r['seed']}: {(up + down) / 1e6:.1f} MB up plus "
                     f"down, {ratio_text(dense / (up + down))} less than dense float32 "
                     f"(uplink alone {ratio_text(dense / 2 / up)})")
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="comma-separated run directories (baseline)")
    p.add_argument("--b", required=True, help="comma-separated run directories, same seeds")
    p.add_argument("--a_label", default="A")
    p.add_argument("--b_label", default="B")
    p.add_argument("--metric", default="test_accuracy",
                   choices=["test_accuracy", "validation_accuracy"])
    p.add_argument("--last_epochs", type=int, default=0,
                   help="also print each seed's mean over its last N epochs, paired")
    args = p.parse_args(argv)
    if args.last_epochs < 0:
        p.error(f"--last_epochs must be >= 0, got {args.last_epochs}")
    return args


def main(argv=None):
    args = parse_args(argv)
    a_runs = [load_run(p) for p in args.a.split(",") if p]
    b_runs = [load_run(p) for p in args.b.split(",") if p]
    if len(a_runs) != len(b_runs):
        sys.exit(f"epoch_curves: {len(a_runs)} --a runs but {len(b_runs)} --b runs; "
                 "they pair by position")
    for a, b in zip(a_runs, b_runs):
        if a["seed"] != b["seed"]:
            sys.exit(f"epoch_curves: {a['path']} has seed {a['seed']} but its pair "
                     f"{b['path']} has seed {b['seed']}")
    print(render(a_runs, b_runs, args.a_label, args.b_label, args.metric))
    if args.last_epochs:
        print()
        print(render_last_epochs(a_runs, b_runs, args.a_label, args.b_label,
                                 args.metric, args.last_epochs))
    bytes_lines = "\n".join(filter(None, [render_bytes(a_runs, args.a_label),
                                          render_bytes(b_runs, args.b_label)]))
    if bytes_lines:
        print()
        print(bytes_lines)


if __name__ == "__main__":
    main()
