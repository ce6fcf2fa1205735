#!/usr/bin/python3
"""Training quality: tuned baselines, several seeds, entropy against top-k at equal bytes.

The protocol of docs/BENCHMARKS.md "Training quality", through
entrograd-launch on this machine, one run at a time:

 1. Sweep (--sweep_epochs): `dense` at every --lrs learning rate (momentum
    0.9) and each of the first --dense_sweep_seeds seeds, its rate chosen on
    the mean; then at seed --seeds[0], for each --points rho, `entropy` at
    every rate, the top-k density that sends entropy's bytes (one run at a
    guess, then a proportional correction), and `topk` at that density at every rate; each
    compressed setting then also with every --warmups warm-up length (DGC's)
    at its best rate. Every choice is made on the validation set (the last
    --validation training images, held out), never on test, per point: a
    rate that suits 50x may diverge at 200x.
 2. Main (every seed, --epochs): `dense` at its chosen rate; each point's
    `entropy` and `topk` at theirs (top-k's density corrected once more on
    the first seed if the longer run's bytes differ from entropy's by more
    than 5%); `entropy_budget` (D = the last point's top-k density) and
    `threshold` (--threshold) at the last point's entropy settings, for the
    Pareto plot. --main_policies leaves out dense, entropy_budget or
    threshold (a high-compression study against an earlier dense, say).
    A run that diverges (the worker stops on a non-finite gradient) counts
    as chance accuracy, 10%.
 3. Report: report.md (the sweep; mean +- standard deviation over seeds of
    test and validation accuracy; bytes up plus down and uplink alone against
    the dense float32 exchange; each paired difference by seed, entropy minus
    top-k and each policy minus dense), pareto.svg (test accuracy against
    wire bytes, log scale, one point per setting with its seed spread),
    results.json (every run's summary).

--quick runs the same phases in a couple of minutes (2 workers, a few
steps per run, two seeds): a smoke test of the pipeline, not a result.

Example (one point, about 50 minutes here on `cnn`: ~50 s a sweep run, ~135 s
a main run). A second point into the same --out reuses the dense runs and
takes about 35 minutes more; the first table of docs/BENCHMARKS.md is both:
  /usr/bin/python3 bench/quality_study.py --out out/quality
  /usr/bin/python3 bench/quality_study.py --out out/quality --points 0.01,0.002
Needs entrograd built in build/ (or --build) and Fashion-MNIST (setup.sh).
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = "/usr/share/datasets/fashion-mnist"
# A diverged run (the worker stops on a non-finite gradient) counts as
# chance: 10 balanced classes.
CHANCE_ACCURACY = 0.10


def log(*parts):
    print("[quality_study]", *parts, file=sys.stderr, flush=True)


class Runner:
    """Runs entrograd-launch once per setting; reuses a finished run's
    summary.json, so a stopped study resumes where it was."""

    def __init__(self, args):
        self.args = args
        self.launch = os.path.join(args.build, "workers", "launcher", "entrograd-launch")
        if not os.access(self.launch, os.X_OK):
            sys.exit(f"quality_study: {self.launch} is missing: build entrograd first "
                     "(bash scripts/build.sh) or pass --build")
        self.runs = []

    def run(self, phase, policy, seed, epochs, lr, warmup, rho=None, threshold=None):
        a = self.args
        name = f"{phase}/{policy}"
        if rho is not None:
            name += f"_rho{rho:g}"
        if threshold is not None:
            name += f"_tau{threshold:g}"
        name += f"_lr{lr:g}_w{warmup}_s{seed}"
        for row in self.runs:  # asked again (the sweep reuses runs)
            if row["name"] == name:
                return row
        out = os.path.join(a.out, name)
        summary_path = os.path.join(out, "summary.json")
        diverged_path = os.path.join(out, "diverged.txt")
        if not os.path.exists(summary_path) and not os.path.exists(diverged_path):
            cmd = [self.launch, f"--workers={a.workers}", f"--model={a.model}",
                   f"--batch_size={a.batch_size}", f"--epochs={epochs}",
                   f"--max_steps={a.max_steps}", f"--seed={seed}", f"--lr={lr}",
                   f"--momentum={a.momentum}", f"--policy={policy}",
                   f"--warmup_steps={warmup}", f"--validation={a.validation}",
                   f"--eval_samples={a.sweep_eval_samples if phase == 'sweep' else a.eval_samples}",
                   # Only the final accuracy is used: evaluating 15,000
                   # images after every epoch would cost rank 0 (and every
                   # rank waiting for it) about 36 s an epoch here.
                   "--eval_every=0", "--eval_each_epoch=false",
                   f"--value_type={'f32' if policy == 'dense' else a.value_type}",
                   f"--timeout={a.run_timeout}s",
                   f"--out={out}"]
            if rho is not None:
                cmd.append(f"--rho={rho}")
            if threshold is not None:
                cmd.append(f"--threshold={threshold}")
            # --value_type, --dense_below and --merged_keep_factor are
            # levers of the compressed policies: dense stays the float32
            # exchange the bytes and the accuracy are measured against.
            # They go to the launcher, which records them in summary.json.
            if policy != "dense":
                if a.dense_below is not None:
                    cmd.append(f"--dense_below={a.dense_below}")
                cmd.append(f"--merged_keep_factor={a.merged_keep_factor:g}")
            worker_args = list(a.compressed_worker_args)
            if policy == "entropy":
                worker_args += a.entropy_worker_args
            if worker_args and policy != "dense":
                cmd.append(f"--extra_worker_args={' '.join(worker_args)}")
            os.makedirs(out, exist_ok=True)
            log(" ".join(cmd))
            start = time.monotonic()
            with open(os.path.join(out, "launch.log"), "w") as logfile:
                code = subprocess.run(cmd, stdout=logfile, stderr=subprocess.STDOUT,
                                      cwd=ROOT).returncode
            log(f"exit {code} after {time.monotonic() - start:.0f} s")
            launch_log = open(os.path.join(out, "launch.log")).read()
            reason = next((line for line in launch_log.splitlines()
                           if "non-finite" in line), None)
            if code != 0 and reason is not None:
                with open(diverged_path, "w") as f:
                    f.write(reason + "\n")
            elif code != 0 or not os.path.exists(summary_path):
                sys.exit(f"quality_study: {name} failed (exit {code}):\n{launch_log[-2000:]}")
        row = {"name": name, "phase": phase, "policy": policy, "seed": seed,
               "epochs": epochs, "lr": lr, "warmup": warmup, "rho": rho,
               "threshold": threshold}
        if os.path.exists(diverged_path):
            row.update(diverged=True, steps=None, test_accuracy=CHANCE_ACCURACY,
                       validation_accuracy=CHANCE_ACCURACY, uplink=None, downlink=None,
                       wire=None, dense=None, seconds_per_step=None)
            log(f"{name}: diverged ({open(diverged_path).read().strip()})")
            self.runs.append(row)
            self.save()
            return row
        s = json.load(open(summary_path))
        if not s["replicas_identical"]:
            sys.exit(f"quality_study: {name}: replicas ended different ({summary_path})")
        row.update(diverged=False, steps=s["steps"], test_accuracy=s["test_accuracy"],
                   validation_accuracy=s["validation_accuracy"],
                   uplink=s["uplink_wire_bytes"], downlink=s["downlink_wire_bytes"],
                   wire=s["wire_bytes"], dense=s["dense_equivalent_bytes"],
                   seconds_per_step=s["seconds_per_step"])
        for key in ("test_accuracy", "validation_accuracy"):
            if row[key] is None or (isinstance(row[key], str)):
                sys.exit(f"quality_study: {name}: no {key} in {summary_path}")
        log(f"{name}: validation {row['validation_accuracy']:.4f} "
            f"test {row['test_accuracy']:.4f} x{row['dense'] / row['wire']:.1f}")
        self.runs.append(row)
        self.save()
        return row

    def save(self):
        with open(os.path.join(self.args.out, "results.json"), "w") as f:
            json.dump({"args": vars(self.args), "runs": self.runs}, f, indent=1)


def matched_topk_rho(entropy_row, topk_row):
    """The top-k density that sends entropy's wire bytes, from one top-k run:
    top-k's bytes grow in proportion to its density. Keeps top-k's density
    when either run diverged (no bytes to match)."""
    if entropy_row["diverged"] or topk_row["diverged"]:
        return topk_row["rho"]
    return float(f"{topk_row['rho'] * entropy_row['wire'] / topk_row['wire']:.3g}")


def tune(runner, a, policy, rho):
    """The sweep of one policy at one point (seed --seeds[0], --sweep_epochs):
    every --lrs rate, then every --warmups length at the best rate, chosen on
    validation. Returns the chosen (lr, warmup)."""
    seed = a.seeds[0]
    rows = [runner.run("sweep", policy, seed, a.sweep_epochs, lr, 0, rho=rho) for lr in a.lrs]
    chosen = max(rows, key=lambda r: r["validation_accuracy"])
    for warmup in a.warmups:
        if warmup == 0:
            continue
        row = runner.run("sweep", policy, seed, a.sweep_epochs, chosen["lr"], warmup, rho=rho)
        if row["validation_accuracy"] > chosen["validation_accuracy"]:
            chosen = row
    label = policy if rho is None else f"{policy} rho {rho:g}"
    log(f"chosen on validation: {label} lr {chosen['lr']:g} warm-up {chosen['warmup']}")
    return chosen["lr"], chosen["warmup"]


def tune_dense(runner, a):
    """Dense's rate, chosen on the mean validation accuracy over the first
    --dense_sweep_seeds seeds: a rate that wins at one seed can lose most of
    its ReLU units at another (lr 0.1 at seed 3 here, 84.6% after 3 epochs),
    and the baseline every policy is held against must not hang on one
    seed's luck. Returns (lr, 0): dense takes no warm-up."""
    seeds = a.seeds[:a.dense_sweep_seeds]
    means = {}
    for lr in a.lrs:
        rows = [runner.run("sweep", "dense", seed, a.sweep_epochs, lr, 0) for seed in seeds]
        means[lr] = statistics.fmean(r["validation_accuracy"] for r in rows)
    lr = max(a.lrs, key=lambda v: means[v])
    log(f"chosen on validation (mean of seeds {','.join(map(str, seeds))}): dense lr {lr:g}")
    return lr, 0


def sweep(runner, a):
    """Phase 1, per point: entropy's rate and warm-up, top-k's density matched
    to entropy's bytes (one run at the first rate, then one correction), and
    top-k's rate and warm-up at that density; dense's rate once. Returns
    {("dense", None) | (policy, entropy rho): (lr, warmup)} and
    {entropy rho: top-k density}."""
    best, topk_rhos = {}, {}
    if "dense" in a.main_policies:
        best[("dense", None)] = tune_dense(runner, a)
    topk_share = 0.5  # entropy keeps rho x f with f ~ 0.3-0.6
    for rho in a.points:
        best[("entropy", rho)] = tune(runner, a, "entropy", rho)
        e = runner.run("sweep", "entropy", a.seeds[0], a.sweep_epochs, a.lrs[0], 0, rho=rho)
        guess = float(f"{rho * topk_share:.3g}")
        t = runner.run("sweep", "topk", a.seeds[0], a.sweep_epochs, a.lrs[0], 0, rho=guess)
        topk_rhos[rho] = matched_topk_rho(e, t)
        topk_share = topk_rhos[rho] / rho
        best[("topk", rho)] = tune(runner, a, "topk", topk_rhos[rho])
    return best, topk_rhos


def main_phase(runner, a, best, topk_rhos):
    """Phase 2: every setting at every seed. Top-k's density from the sweep
    is corrected once more on the first seed when the longer run's bytes
    differ from entropy's by more than 5%."""
    if "dense" in a.main_policies:
        for seed in a.seeds:
            runner.run("main", "dense", seed, a.epochs, best[("dense", None)][0], 0)
    for rho in a.points:
        e_lr, e_w = best[("entropy", rho)]
        t_lr, t_w = best[("topk", rho)]
        topk_rho = topk_rhos[rho]
        for i, seed in enumerate(a.seeds):
            e = runner.run("main", "entropy", seed, a.epochs, e_lr, e_w, rho=rho)
            t = runner.run("main", "topk", seed, a.epochs, t_lr, t_w, rho=topk_rho)
            if i == 0 and not (e["diverged"] or t["diverged"]) and \
                    abs(t["wire"] / e["wire"] - 1) > 0.05:
                t["phase"] = "calibration"  # not one of the compared settings
                topk_rho = matched_topk_rho(e, t)
                runner.run("main", "topk", seed, a.epochs, t_lr, t_w, rho=topk_rho)
        topk_rhos[rho] = topk_rho
    last = a.points[-1]
    e_lr, e_w = best[("entropy", last)]
    for seed in a.seeds:
        if "entropy_budget" in a.main_policies:
            runner.run("main", "entropy_budget", seed, a.epochs, e_lr, e_w, rho=topk_rhos[last])
        if "threshold" in a.main_policies:
            runner.run("main", "threshold", seed, a.epochs, e_lr, e_w, threshold=a.threshold)


def mean_sd(values):
    m = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return m, sd


def pm(values, scale=100, digits=2):
    m, sd = mean_sd([v * scale for v in values])
    return f"{m:.{digits}f} ± {sd:.{digits}f}"


def ratio_text(ratio):
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def setting_key(r):
    return (r["policy"], r["rho"], r["threshold"], r["lr"], r["warmup"])


def setting_label(key):
    policy, rho, threshold, lr, warmup = key
    label = policy
    if rho is not None:
        label += f" rho {rho:g}"
    if threshold is not None:
        label += f" tau {threshold:g}"
    return label + f" (lr {lr:g}, warm-up {warmup})"


def run_length(epochs, a):
    """How long each run trained: --max_steps caps the epochs, so a capped
    study must not be reported as if it ran them whole."""
    if a.max_steps > 0:
        return f"{a.max_steps} steps or {epochs} epoch(s), whichever ends first"
    return f"{epochs} epoch(s)"


def report(runs, a):
    dense_below = "1024 (the default)" if a.dense_below is None else a.dense_below
    lines = [f"{a.model}, {a.workers} workers, batch {a.batch_size} per worker. The "
             f"compressed policies send {a.value_type} values and layers under "
             f"{dense_below} elements whole"
             + (f", with global top-k (merged keep factor {a.merged_keep_factor:g})"
                if a.merged_keep_factor else "")
             + "; dense sends float32."
             + (f" Compressed runs add {' '.join(a.compressed_worker_args)}."
                if a.compressed_worker_args else "")
             + (f" Entropy runs add {' '.join(a.entropy_worker_args)}."
                if a.entropy_worker_args else ""), ""]
    sweep_rows = [r for r in runs if r["phase"] == "sweep"]
    lines += [f"### Sweep ({run_length(a.sweep_epochs, a)}; dense's rate chosen on the mean "
              f"of its seeds, the others' at seed {a.seeds[0]}; chosen on "
              f"validation: the last {a.validation} training images; test accuracy "
              f"on the first {a.sweep_eval_samples or 10000} test images, not used)", "",
              "| policy | rho | lr | warm-up | seed | validation acc | test acc "
              "| less than dense f32 |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sweep_rows:
        rho = "" if r["rho"] is None else f"{r['rho']:g}"
        if r["diverged"]:
            lines.append(f"| {r['policy']} | {rho} | {r['lr']:g} | {r['warmup']} | "
                         f"{r['seed']} | diverged | diverged | |")
            continue
        lines.append(f"| {r['policy']} | {rho} | "
                     f"{r['lr']:g} | {r['warmup']} | {r['seed']} | "
                     f"{100 * r['validation_accuracy']:.2f}% | "
                     f"{100 * r['test_accuracy']:.2f}% | {ratio_text(r['dense'] / r['wire'])} |")
    main_rows = [r for r in runs if r["phase"] == "main"]
    groups = {}
    for r in main_rows:
        groups.setdefault(setting_key(r), []).append(r)
    lines += ["", f"### Main runs: seeds {','.join(map(str, a.seeds))}, {run_length(a.epochs, a)}, "
              f"{a.workers} workers, batch {a.batch_size}, model {a.model}", "",
              "| setting | seeds | test acc (mean ± sd) | validation acc | wire MB (up+down) "
              "| less than dense f32 (up+down) | uplink alone | per seed (test) |",
              "|---|---:|---:|---:|---:|---:|---:|---|"]
    for key, rows in groups.items():
        sent = [r for r in rows if not r["diverged"]] or [None]
        bytes_cells = "- | - | - | " if sent == [None] else (
            f"{statistics.fmean(r['wire'] for r in sent) / 1e6:.1f} | "
            f"{ratio_text(statistics.fmean(r['dense'] / r['wire'] for r in sent))} | "
            f"{ratio_text(statistics.fmean(r['dense'] / 2 / r['uplink'] for r in sent))} | ")
        lines.append(
            f"| {setting_label(key)} | {len(rows)} | {pm([r['test_accuracy'] for r in rows])}% | "
            f"{pm([r['validation_accuracy'] for r in rows])}% | " + bytes_cells
            + ", ".join("diverged (10)" if r["diverged"] else f"{100 * r['test_accuracy']:.2f}"
                        for r in sorted(rows, key=lambda r: r["seed"]))
            + " |")
    lines += ["", "### Paired differences (same seed), test accuracy in pp", "",
              "| comparison | per seed | mean ± sd | bytes ratio |", "|---|---|---:|---:|"]
    by_setting_seed = {(setting_key(r), r["seed"]): r for r in main_rows}
    dense_key = next((k for k in groups if k[0] == "dense"), None)
    # Entropy (and the budget policy) against top-k wherever they sent about
    # the same bytes (within 25%, on the seeds where neither diverged).
    def mean_wire(key):
        sent = [r["wire"] for r in groups[key] if not r["diverged"]]
        return statistics.fmean(sent) if sent else None
    pairs = []
    topk_keys = [k for k in groups if k[0] == "topk"]
    for ek in sorted((k for k in groups if k[0] in ("entropy", "entropy_budget")),
                     key=lambda k: (k[0], -k[1], k[3])):
        for tk in topk_keys:
            if mean_wire(ek) and mean_wire(tk) and 0.75 <= mean_wire(ek) / mean_wire(tk) <= 1 / 0.75:
                pairs.append((ek, tk))
    paired_topk = {t for _, t in pairs}
    unpaired = [k for k in topk_keys if mean_wire(k) and k not in paired_topk]
    for k in groups:
        if dense_key is not None and k != dense_key:
            pairs.append((k, dense_key))
    for left, right in pairs:
        diffs, ratios = [], []
        for seed in a.seeds:
            l, r = by_setting_seed.get((left, seed)), by_setting_seed.get((right, seed))
            if l and r:
                diffs.append(100 * (l["test_accuracy"] - r["test_accuracy"]))
                if l["wire"] and r["wire"]:
                    ratios.append(l["wire"] / r["wire"])
        if not diffs:
            continue
        m, sd = mean_sd(diffs)
        ratio = statistics.fmean(ratios) if ratios else float("nan")
        lines.append(f"| {setting_label(left)} minus {setting_label(right)} | "
                     + ", ".join(f"{d:+.2f}" for d in diffs)
                     + f" | {m:+.2f} ± {sd:.2f} | {ratio:.2f} |")
    return "\n".join(lines) + "\n", groups, unpaired


def pareto_svg(groups, path, a):
    """Test accuracy (mean, with the seeds' min-max as a bar) against wire
    bytes (mean, log scale), one point per setting."""
    points = []
    for key, rows in groups.items():
        accs = [100 * r["test_accuracy"] for r in rows]
        sent = [r["wire"] for r in rows if not r["diverged"]]
        if not sent:
            continue
        points.append((key, statistics.fmean(sent),
                       statistics.fmean(accs), min(accs), max(accs)))
    if not points:
        return
    colours = {"dense": "#000000", "entropy": "#d62728", "entropy_budget": "#ff7f0e",
               "topk": "#1f77b4", "threshold": "#2ca02c"}
    w, h, left, right, top, bottom = 720, 440, 70, 190, 30, 50
    xs = [math.log10(p[1]) for p in points]
    x0, x1 = math.floor(min(xs)), math.ceil(max(xs))
    if x1 == x0:
        x1 += 1
    y0 = math.floor(min(p[3] for p in points)) - 1
    y1 = math.ceil(max(p[4] for p in points)) + 1
    fx = lambda v: left + (math.log10(v) - x0) / (x1 - x0) * (w - left - right)
    fy = lambda v: top + (y1 - v) / (y1 - y0) * (h - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18">Test accuracy against bytes on the wire: model '
           f'{a.model}, {a.workers} workers, {run_length(a.epochs, a)}, seeds '
           f'{",".join(map(str, a.seeds))} (bar: min-max over seeds)</text>']
    for e in range(x0, x1 + 1):
        x = fx(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{h - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" text-anchor="middle">1e{e}</text>')
    for v in range(int(y0), int(y1) + 1):
        y = fy(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v}%</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
               'bytes on the wire, up plus down, all ranks (log scale)</text>')
    for key, wire, acc, lo, hi in points:
        c = colours.get(key[0], "#888")
        x = fx(wire)
        out.append(f'<line x1="{x:.1f}" y1="{fy(lo):.1f}" x2="{x:.1f}" y2="{fy(hi):.1f}" '
                   f'stroke="{c}"/>')
        out.append(f'<circle cx="{x:.1f}" cy="{fy(acc):.1f}" r="4" fill="{c}">'
                   f'<title>{setting_label(key)}: {acc:.2f}%</title></circle>')
    for i, (policy, c) in enumerate(colours.items()):
        y = top + 10 + 18 * i
        out.append(f'<circle cx="{w - right + 20}" cy="{y}" r="4" fill="{c}"/>')
        out.append(f'<text x="{w - right + 30}" y="{y + 4}">{policy}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="out/quality")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--model", default="cnn")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--sweep_epochs", type=int, default=1)
    p.add_argument("--lrs", default="0.01,0.03,0.1")
    p.add_argument("--dense_sweep_seeds", type=int, default=3,
                   help="dense's rate is chosen on the mean validation accuracy of "
                        "the first N seeds (the compressed policies': seed 1's)")
    p.add_argument("--warmups", default="0,100", help="warm-up steps tried (DGC)")
    # One point by default: two (--points 0.01,0.002) take ~75 minutes here,
    # over the hour the protocol allows one invocation.
    p.add_argument("--points", default="0.002",
                   help="entropy rho of each equal-bytes comparison with top-k, "
                        "comma-separated")
    p.add_argument("--main_policies", default="dense,entropy_budget,threshold",
                   help="main-phase settings besides the entropy/top-k pairs")
    p.add_argument("--threshold", type=float, default=0.1,
                   help="tau of the threshold policy's Pareto point")
    p.add_argument("--validation", type=int, default=5000)
    p.add_argument("--eval_samples", type=int, default=0, help="test images (0: all)")
    p.add_argument("--sweep_eval_samples", type=int, default=1000,
                   help="test images in the sweep, which chooses on validation alone "
                        "(evaluating all 10,000 costs rank 0 about 24 s here)")
    p.add_argument("--value_type", default="f32",
                   help="what the compressed policies send (dense stays f32)")
    p.add_argument("--dense_below", type=int, default=None,
                   help="layers below N elements go whole (compressed policies; "
                        "default: the worker's 1024)")
    p.add_argument("--merged_keep_factor", type=float, default=0,
                   help="global top-k for the compressed policies (launcher "
                        "--merged_keep_factor; 0: the union)")
    p.add_argument("--compressed_worker_args", default="",
                   help="more entrograd-worker flags for the compressed policies, "
                        "space-separated; give it with '=' since its value starts "
                        "with '--': --compressed_worker_args=--min_keep_ratio=0.001")
    p.add_argument("--entropy_worker_args", default="",
                   help="more entrograd-worker flags for the entropy policy alone, for "
                        "its variants that the other policies refuse: "
                        "--entropy_worker_args=--share_hold_steps=20")
    p.add_argument("--max_steps", type=int, default=0, help="per run (0: the epochs)")
    p.add_argument("--run_timeout", type=int, default=1800, help="seconds per run")
    p.add_argument("--quick", action="store_true",
                   help="smoke: 2 workers, 12 steps per run, seeds 1,2, two rates")
    p.add_argument("--fresh", action="store_true",
                   help="delete --out first (default: reuse finished runs there)")
    p.add_argument("--report_only", action="store_true",
                   help="rewrite report.md and pareto.svg from --out/results.json")
    a = p.parse_args(argv)
    if a.quick:
        a.workers, a.max_steps, a.epochs, a.sweep_epochs = 2, 12, 1, 1
        a.seeds, a.lrs, a.warmups, a.points = "1,2", "0.03,0.1", "0,4", "0.01"
        a.validation, a.eval_samples, a.sweep_eval_samples = 500, 500, 500
    a.seeds = [int(s) for s in a.seeds.split(",")]
    a.lrs = [float(v) for v in a.lrs.split(",")]
    a.warmups = [int(v) for v in a.warmups.split(",")]
    a.points = [float(v) for v in a.points.split(",")]
    a.main_policies = a.main_policies.split(",")
    a.compressed_worker_args = a.compressed_worker_args.split()
    a.entropy_worker_args = a.entropy_worker_args.split()
    return a


def main():
    a = parse_args()
    if a.report_only:
        runs = json.load(open(os.path.join(a.out, "results.json")))["runs"]
    else:
        if not os.path.exists(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz")):
            print(f"quality_study: SKIP: Fashion-MNIST is not installed in {DATA_DIR} "
                  "(apt-get install dataset-fashion-mnist)")
            return 77
        if a.fresh:
            shutil.rmtree(a.out, ignore_errors=True)
        os.makedirs(a.out, exist_ok=True)
        runner = Runner(a)
        best, topk_rhos = sweep(runner, a)
        main_phase(runner, a, best, topk_rhos)
        runs = runner.runs
    text, groups, unpaired = report(runs, a)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text)
    pareto_svg(groups, os.path.join(a.out, "pareto.svg"), a)
    print(text)
    # Equal bytes is what makes entropy against top-k a fair comparison.
    if unpaired:
        print("quality_study: no entropy setting sent within 25% of the bytes of "
              + ", ".join(setting_label(k) for k in unpaired), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
