#!/usr/bin/python3
"""Does entrograd make training faster where the network is slow?

Runs, one after another on this machine, for every --links x --models pair:
  * PyTorch DDP (gloo), bench/ddp_fashion_mnist.py: on loopback with its own
    process spawning, on an emulated link through bench/ddp_link.sh;
  * entrograd-launch (--shards aggregators) with --policy dense, entropy
    (--rho) and topk, the top-k density chosen so that it sends about the
    bytes entropy sent (measured in the entropy run just before it);
and once per model DDP with --compute_only (no allreduce: the compute-only
time per step, the denominator of the ideal speed-up). Every run uses the
same model, data order, seed, batch, learning rate and steps.

Emulated links ("1gbit", "10gbit", ...) put every process in its own
network namespace, veth pairs to a bridge, tc tbf on both directions of
every host link (workers/link_emulation). "loopback" runs everything on lo.

Writes into --out:
  results.json             one object per run (the numbers below)
  report.md                the tables for docs/BENCHMARKS.md
  time_to_accuracy_<link>_<model>.svg   test accuracy against training seconds
and every run's own directory (summary.json / ddp.json, logs).

Per run: median time per step (DDP: rank 0's; entrograd: over all ranks'
step events), the split into forward/backward, compress, wait (network and
merge) and apply, payload bytes per rank and step (all gradient bytes sent
by anyone, divided by ranks x steps: DDP's ring allreduce sends 2 (W-1)/W
gradients per rank; entrograd's uplink plus the aggregator's downlink), the
bytes the emulated interfaces sent per rank and step (same division),
test accuracy after each evaluation against training time (evaluation time
left out), and final accuracy. Ratios against DDP from the same run:
speed-up per step, the ideal speed-up (DDP step / DDP compute-only step),
the share of the ideal reached, and time-to-accuracy (target: DDP's final
accuracy minus 0.5 pp, first evaluation at or above it).

Example (the command behind docs/BENCHMARKS.md):
  /usr/bin/python3 bench/link_comparison.py --out out/link_comparison \\
      --links loopback,1gbit --models wide --workers 4 --batch_size 8 \\
      --max_steps 150 --eval_every 30 --eval_samples 2000
Needs root for emulated links; entrograd built in build/ (or --build).
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"


def log(*parts):
    print("[link_comparison]", *parts, file=sys.stderr, flush=True)


def run(cmd, logfile, timeout, env=None):
    log(" ".join(cmd))
    start = time.monotonic()
    with open(logfile, "w") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout, cwd=ROOT,
                              env=dict(os.environ, **(env or {})))
    log(f"exit {proc.returncode} after {time.monotonic() - start:.0f} s")
    if proc.returncode != 0:
        tail = open(logfile).read()[-2000:]
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}; log {logfile}:\n{tail}")


def common_args(args, model, max_steps=None):
    return {
        "max_steps": max_steps or args.max_steps,
        "batch_size": args.batch_size,
        "eval_every": args.eval_every,
        "eval_samples": args.eval_samples,
        "seed": args.seed,
        "lr": args.lr,
        "model": model,
    }


def run_ddp(args, link, model, out_dir, compute_only=False):
    os.makedirs(out_dir, exist_ok=True)
    flags = []
    # The compute-only run gives only the median step (the ideal's
    # denominator), which a few dozen steps settle; on a long run it would
    # cost as much as DDP's own compute.
    steps = args.compute_only_steps if compute_only and args.compute_only_steps else None
    for key, value in common_args(args, model, steps).items():
        flags += [f"--{key}", str(value)]
    flags += ["--log_every", "0"]
    if compute_only:
        flags.append("--compute_only")
    json_out = os.path.join(out_dir, "ddp.json")
    if link == "loopback":
        cmd = [PYTHON, os.path.join(ROOT, "bench/ddp_fashion_mnist.py"),
               "--workers", str(args.workers), "--json_out", json_out] + flags
    else:
        cmd = ["bash", os.path.join(ROOT, "bench/ddp_link.sh"), "--link", link,
               "--workers", str(args.workers), "--out", out_dir,
               "--timeout", f"{args.run_timeout}s", "--"] + flags
    netns = os.path.join(args.build, "workers/link_emulation/entrograd-netns")
    run(cmd, os.path.join(out_dir, "run.log"), args.run_timeout + 60,
        env={"ENTROGRAD_NETNS": netns})
    ddp = json.load(open(json_out))
    steps = ddp["steps"]
    if link == "loopback":
        # lo counts every byte twice (sent and received).
        interface = ddp.get("loopback_bytes_total", 0) / 2
    else:
        # Bytes the hosts sent during the training loop (the wire counters
        # of the whole run also hold start-up and the initial broadcast).
        interface = ddp.get("interface_tx_bytes_total", ddp.get("wire_tx_bytes_total", 0))
    return {
        "link": link, "model": model,
        "run": "ddp_compute_only" if compute_only else "ddp",
        "steps": steps,
        "step_seconds": ddp["step_seconds_median"],
        "step_seconds_p90": ddp["step_seconds_p90"],
        "forward_backward_seconds": ddp["forward_backward_seconds_median"],
        "compress_seconds": 0.0,
        "wait_seconds": ddp["wait_seconds_median"],
        "apply_seconds": ddp["apply_seconds_median"],
        # A ring allreduce sends 2 (W-1)/W gradients per rank and step.
        "payload_bytes_per_rank_step":
            ddp["gradient_bytes_per_step_per_rank"] * 2 * (args.workers - 1) / args.workers,
        "interface_bytes_per_rank_step": interface / max(1, steps * args.workers),
        "test_accuracy": ddp["test_accuracy"],
        "train_seconds": ddp["train_seconds"],
        "evals": [{"step": e["step"], "train_seconds": e["train_seconds"],
                   "test_accuracy": e["test_accuracy"]} for e in ddp["evals"]],
        "parameters": ddp.get("num_parameters"),
    }


def run_entrograd(args, link, model, policy, rho, out_dir):
    cmd = [os.path.join(args.build, "workers/launcher/entrograd-launch"),
           f"--workers={args.workers}", f"--policy={policy}", f"--rho={rho}",
           f"--shards={args.shards}",
           f"--out={out_dir}", f"--timeout={args.run_timeout}s",
           "--round_timeout=10m"]
    for key, value in common_args(args, model).items():
        cmd.append(f"--{key}={value}")
    if link != "loopback":
        cmd.append(f"--link={link}")
    os.makedirs(out_dir, exist_ok=True)
    run(cmd, os.path.join(out_dir, "..", os.path.basename(out_dir) + ".log"),
        args.run_timeout + 60)
    s = json.load(open(os.path.join(out_dir, "summary.json")))
    rank_steps = max(1, s["steps"] * args.workers)
    interface = s["link_bytes"] if s.get("link") else None
    return {
        "link": link, "model": model, "run": f"entrograd_{policy}", "rho": rho,
        "shards": s.get("shards", 1),
        "steps": s["steps"],
        "step_seconds": s["step_seconds_median"],
        "step_seconds_p90": s["step_seconds_p90"],
        "forward_backward_seconds": s["forward_backward_seconds_median"],
        "compress_seconds": s["compress_seconds_median"],
        "wait_seconds": s["wait_seconds_median"],
        "apply_seconds": s["apply_seconds_median"],
        "payload_bytes_per_rank_step": s["wire_bytes"] / rank_steps,
        "uplink_bytes_per_rank_step": s["uplink_wire_bytes"] / rank_steps,
        "interface_bytes_per_rank_step":
            interface / rank_steps if interface is not None else None,
        "compression_ratio": s["compression_ratio"],
        "test_accuracy": s["test_accuracy"],
        "train_seconds": s["train_seconds"],
        "evals": [{"step": e["step"], "train_seconds": e["train_seconds"],
                   "test_accuracy": e["test_accuracy"]} for e in s["evals"]],
        "replicas_identical": s["replicas_identical"],
        "parameters": s["parameters"],
    }


def time_to(evals, target):
    for e in evals:
        if e["test_accuracy"] >= target:
            return e["train_seconds"]
    return None


def add_ratios(rows, compute_only):
    by_pair = {}
    for row in rows:
        by_pair.setdefault((row["link"], row["model"]), []).append(row)
    for (link, model), group in by_pair.items():
        ddp = next((r for r in group if r["run"] == "ddp"), None)
        if ddp is None:
            continue
        compute = compute_only.get(model)
        target = ddp["test_accuracy"] - 0.005
        ddp_tta = time_to(ddp["evals"], target)
        ideal = ddp["step_seconds"] / compute["step_seconds"] if compute else None
        ddp_comm_share = 1 - compute["step_seconds"] / ddp["step_seconds"] if compute else None
        for row in group:
            row["speedup_vs_ddp"] = ddp["step_seconds"] / row["step_seconds"]
            row["ideal_speedup"] = ideal
            row["ddp_communication_share"] = ddp_comm_share
            row["share_of_ideal"] = row["speedup_vs_ddp"] / ideal if ideal else None
            row["target_accuracy"] = target
            row["time_to_target"] = time_to(row["evals"], target)
            tta = row["time_to_target"]
            row["time_to_target_vs_ddp"] = (ddp_tta / tta) if (ddp_tta and tta) else None


def fmt(value, spec, none="-"):
    return none if value is None else format(value, spec)


def mb(value):
    return "-" if value is None else f"{value / 1e6:.2f}"


def report(rows, args):
    lines = [
        f"Workers {args.workers}, batch {args.batch_size} per rank, "
        f"{args.max_steps} steps, lr {args.lr}, seed {args.seed}, evaluation every "
        f"{args.eval_every} steps on the first {args.eval_samples or 10000} test images"
        + (f"; the DDP compute-only run {args.compute_only_steps} steps."
           if getattr(args, "compute_only_steps", 0) else "."),
        "",
        "| link | model | run | time/step (median) | vs DDP | ideal | share of ideal | "
        "fwd+bwd | compress | wait | apply | payload MB/rank-step | interface MB/rank-step | "
        "final acc | time to target (s) | TTA vs DDP |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        name = r["run"] + (f" (rho {r['rho']:g})" if "rho" in r else "")
        if r.get("shards", 1) > 1:
            name += f", {r['shards']} shards"
        lines.append(
            f"| {r['link']} | {r['model']} | {name} | {r['step_seconds']:.3f} s | "
            f"{fmt(r.get('speedup_vs_ddp'), '.2f')}x | {fmt(r.get('ideal_speedup'), '.2f')}x | "
            f"{fmt(r.get('share_of_ideal') and 100 * r['share_of_ideal'], '.0f')}% | "
            f"{r['forward_backward_seconds']:.3f} | {r['compress_seconds']:.3f} | "
            f"{r['wait_seconds']:.3f} | {r['apply_seconds']:.3f} | "
            f"{mb(r['payload_bytes_per_rank_step'])} | {mb(r.get('interface_bytes_per_rank_step'))} | "
            f"{100 * r['test_accuracy']:.2f}% | {fmt(r.get('time_to_target'), '.1f')} | "
            f"{fmt(r.get('time_to_target_vs_ddp'), '.2f')}x |")
    for r in rows:
        if r["run"] == "ddp" and r.get("ddp_communication_share") is not None:
            lines.append("")
            lines.append(
                f"DDP on {r['link']}, {r['model']}: {100 * r['ddp_communication_share']:.0f}% "
                f"of its step is communication (1 - compute-only / step).")
    return "\n".join(lines) + "\n"


COLORS = {"ddp": "#444444", "entrograd_dense": "#1f77b4",
          "entrograd_entropy": "#d62728", "entrograd_topk": "#2ca02c"}


def svg_plot(rows, link, model, path):
    """Test accuracy against training seconds, one polyline per run."""
    series = [r for r in rows if r["link"] == link and r["model"] == model and r["evals"]]
    if not series:
        return
    w, h, left, right, top, bottom = 720, 420, 70, 170, 40, 50
    xmax = max(e["train_seconds"] for r in series for e in r["evals"]) * 1.05 or 1
    accs = [e["test_accuracy"] for r in series for e in r["evals"]]
    ymin, ymax = max(0.0, min(accs) - 0.05), min(1.0, max(accs) + 0.02)

    def sx(x):
        return left + (w - left - right) * x / xmax

    def sy(y):
        return top + (h - top - bottom) * (1 - (y - ymin) / (ymax - ymin))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14">Time to accuracy: {model} model, '
           f'{link}, {series[0]["steps"]} steps</text>']
    for i in range(6):
        yv = ymin + (ymax - ymin) * i / 5
        out.append(f'<line x1="{left}" y1="{sy(yv):.1f}" x2="{w - right}" y2="{sy(yv):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 8}" y="{sy(yv) + 4:.1f}" '
                   f'text-anchor="end">{100 * yv:.0f}%</text>')
        xv = xmax * i / 5
        out.append(f'<text x="{sx(xv):.1f}" y="{h - bottom + 18}" text-anchor="middle">'
                   f'{xv:.0f}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
               f'training seconds (evaluation time left out)</text>')
    out.append(f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>')
    for k, r in enumerate(series):
        color = COLORS.get(r["run"], "#9467bd")
        points = " ".join(f"{sx(e['train_seconds']):.1f},{sy(e['test_accuracy']):.1f}"
                          for e in r["evals"])
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>')
        ly = top + 20 * k + 10
        out.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 30}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/><text x="{w - right + 35}" '
                   f'y="{ly + 4}">{r["run"].replace("entrograd_", "entrograd ")}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="out/link_comparison")
    p.add_argument("--links", default="loopback,1gbit")
    p.add_argument("--models", default="wide")
    p.add_argument("--runs", default="ddp,dense,entropy,topk")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--max_steps", type=int, default=150)
    p.add_argument("--eval_every", type=int, default=30)
    p.add_argument("--eval_samples", type=int, default=2000)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rho", type=float, default=0.01, help="entropy policy's rho")
    p.add_argument("--shards", type=int, default=1,
                   help="entrograd's aggregator shards, each on its own link "
                        "(large layers are cut into parts spread over them)")
    p.add_argument("--compute_only_steps", type=int, default=0,
                   help="steps of the DDP compute-only run (0: --max_steps)")
    p.add_argument("--run_timeout", type=int, default=3600, help="seconds per run")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--report_only", action="store_true",
                   help="only rebuild report.md and the plots from --out/results.json "
                        "(of a run that was stopped, say)")
    args = p.parse_args()
    if args.report_only:
        saved = json.load(open(os.path.join(args.out, "results.json")))
        write_report(saved["rows"], saved["compute_only"], argparse.Namespace(**saved["args"]))
        return
    os.makedirs(args.out, exist_ok=True)
    runs = args.runs.split(",")
    rows, compute_only = [], {}
    results_path = os.path.join(args.out, "results.json")

    def save():
        with open(results_path, "w") as f:
            json.dump({"args": vars(args), "rows": rows,
                       "compute_only": compute_only}, f, indent=2)

    for model in args.models.split(","):
        if "ddp" in runs:
            compute_only[model] = run_ddp(
                args, "loopback", model,
                os.path.join(args.out, f"loopback_{model}", "ddp_compute_only"),
                compute_only=True)
            save()
        for link in args.links.split(","):
            base = os.path.join(args.out, f"{link}_{model}")
            if "ddp" in runs:
                rows.append(run_ddp(args, link, model, os.path.join(base, "ddp")))
                save()
            entropy = None
            for policy in ("dense", "entropy", "topk"):
                if policy not in runs:
                    continue
                rho = args.rho
                if policy == "topk":
                    # About entropy's bytes: top-k at density d sends ~d*n
                    # values plus ~2-byte delta indices per entry, i.e. ~1.5 d
                    # of the dense bytes.
                    rho = round(entropy["uplink_bytes_per_rank_step"] /
                                (4 * entropy["parameters"]) / 1.5, 5) if entropy else args.rho
                row = run_entrograd(args, link, model, policy, rho,
                                    os.path.join(base, policy))
                if policy == "entropy":
                    entropy = row
                rows.append(row)
                save()
    write_report(rows, compute_only, args)  # adds the ratios to the rows
    save()


def write_report(rows, compute_only, args):
    """Adds the ratios against DDP to `rows`, writes report.md and the plots."""
    add_ratios(rows, compute_only)
    text = report(rows + list(compute_only.values()), args)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text)
    for link in sorted({r["link"] for r in rows}):
        for model in sorted({r["model"] for r in rows}):
            svg_plot(rows, link, model,
                     os.path.join(args.out, f"time_to_accuracy_{link}_{model}.svg"))
    print(text)

if __name__ == "__main__":
    main()
