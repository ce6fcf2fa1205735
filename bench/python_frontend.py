#!/usr/bin/python3
"""Time per step of the Python front end against the C++ entrograd-worker.

Both train the same `cnn` model on Fashion-MNIST with the same ranks, policy,
rho, batch size and one intra-op thread per rank, against one
entrograd-aggregator per run on loopback. A step is timed the way the
worker times it (training_job.cc, step_seconds): from gathering the batch to
the end of the optimizer step (forward, backward with the compression hooks,
waiting for the merged update, applying it). The two front ends run
alternately, --repeats times each, so drift of a noisy machine falls on both.

  PYTHONPATH=build/python /usr/bin/python3 bench/python_frontend.py \\
      --build build --steps 150 --warmup 20 --repeats 3 --out out/python_frontend

Writes results.json (every run's median and the overall medians) to --out
and prints a Markdown table with the ratio python / C++ (the issue's goal:
at most 1.05). `rank` is this script's own Python rank (internal).
"""

import argparse
import importlib.util
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVING = re.compile(r"serving on port (\d+)")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="compare", choices=["compare", "rank"])
    parser.add_argument("--build", default="build", help="the CMake build tree")
    parser.add_argument("--out", default="out/python_frontend")
    parser.add_argument("--world_size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=20,
                        help="first steps of every rank left out of the medians")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--policy", default="entropy")
    parser.add_argument("--rho", type=float, default=0.01)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--retain_freed_memory", action=argparse.BooleanOptionalAction,
                        default=True, help="both front ends keep what a step frees "
                        "(entrograd-worker's default); --no-retain_freed_memory: "
                        "glibc's defaults in both")
    # rank mode only
    parser.add_argument("--shards")
    parser.add_argument("--job_id")
    parser.add_argument("--rank", type=int)
    return parser.parse_args()


def load_example():
    """examples/python/train_fashion_mnist.py: its FashionCnn and loader."""
    path = ROOT / "examples" / "python" / "train_fashion_mnist.py"
    spec = importlib.util.spec_from_file_location("train_fashion_mnist", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_rank(args):
    """One Python rank: the worker's loop, one JSON line per step."""
    import torch
    import entrograd
    example = load_example()
    torch.set_num_threads(1)
    if args.retain_freed_memory:
        entrograd.retain_freed_memory()  # as entrograd-worker does by default
    train_x, train_y = example.load_split("/usr/share/datasets/fashion-mnist", "train")
    torch.manual_seed(args.seed)
    model = example.FashionCnn()
    client = entrograd.Client(shards=args.shards.split(","), job_id=args.job_id,
                              rank=args.rank, world_size=args.world_size)
    # entrograd-worker's defaults (worker_flags.cc): lr, momentum, dense_below.
    optimizer = entrograd.DistributedOptimizer(
        model.named_parameters(), client, lr=0.1, policy=args.policy, rho=args.rho,
        dense_below=1000, momentum=0.9)
    order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(args.seed))
    mine = order[args.rank::args.world_size]
    for step in range(args.steps):
        start = time.monotonic()
        begin = (step * args.batch_size) % (len(mine) - args.batch_size)
        index = mine[begin:begin + args.batch_size]
        images, labels = train_x.index_select(0, index), train_y.index_select(0, index)
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        backward_done = time.monotonic() - start
        stats = optimizer.step()
        seconds = time.monotonic() - start
        # As the worker: the hooks' compression is not forward/backward's.
        print(json.dumps({"event": "step", "step": step, "step_seconds": seconds,
                          "forward_backward_seconds":
                              max(0.0, backward_done - stats.compress_seconds),
                          "bytes": stats.uplink_wire_bytes}), flush=True)
    client.close()


def start_aggregator(build, log_path):
    log = open(log_path, "w")
    process = subprocess.Popen(
        [str(build / "aggregator" / "entrograd-aggregator"), "--listen=127.0.0.1:0",
         "--metrics_listen=", "--round_timeout=120s"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True)
    log.close()
    for line in process.stdout:
        match = SERVING.search(line)
        if match:
            return process, f"127.0.0.1:{match.group(1)}"
    raise RuntimeError(f"entrograd-aggregator exited ({process.wait()}); see {log_path}")


def rank_argv(front_end, args, rank, address, job_id, out_dir):
    if front_end == "python":
        return [sys.executable, __file__, "rank", f"--shards={address}", f"--job_id={job_id}",
                f"--rank={rank}", f"--world_size={args.world_size}", f"--steps={args.steps}",
                f"--policy={args.policy}", f"--rho={args.rho}",
                f"--batch_size={args.batch_size}", f"--seed={args.seed}",
                "--retain_freed_memory" if args.retain_freed_memory
                else "--no-retain_freed_memory"]
    return [str(Path(args.build) / "workers" / "fashion_mnist" / "entrograd-worker"),
            f"--shards={address}", f"--job_id={job_id}", f"--rank={rank}",
            f"--world_size={args.world_size}", f"--max_steps={args.steps}",
            f"--policy={args.policy}", f"--rho={args.rho}", f"--batch_size={args.batch_size}",
            f"--seed={args.seed}", "--threads=1", "--model=cnn", "--eval_samples=100",
            f"--retain_freed_memory={str(args.retain_freed_memory).lower()}",
            f"--out={out_dir}/rank{rank}"]


def run_once(front_end, args, repeat):
    """One job of world_size ranks of `front_end`; its step times and bytes."""
    out_dir = Path(args.out) / f"{front_end}{repeat}"
    out_dir.mkdir(parents=True, exist_ok=True)
    aggregator, address = start_aggregator(Path(args.build), out_dir / "aggregator.log")
    job_id = f"frontend-{front_end}-{repeat}"
    environment = dict(os.environ, OMP_NUM_THREADS="1")
    ranks = []
    try:
        for rank in range(args.world_size):
            with open(out_dir / f"rank{rank}.err", "w") as stderr:
                ranks.append(subprocess.Popen(
                    rank_argv(front_end, args, rank, address, job_id, out_dir),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                    text=True, env=environment))
        seconds, exchange_seconds, wire_bytes = [], [], []
        for rank, process in enumerate(ranks):
            output, _ = process.communicate(timeout=1800)
            if process.returncode != 0:
                raise RuntimeError(f"{front_end} rank {rank} exited {process.returncode}; "
                                   f"see {out_dir}/rank{rank}.err")
            uplink_before = 0  # the worker reports its running total
            for line in output.splitlines():
                if not line.startswith("{"):
                    continue
                event = json.loads(line)
                if event.get("event") != "step":
                    continue
                if front_end == "python":
                    step_bytes = event["bytes"]
                else:
                    step_bytes = event["uplink_wire_bytes"] - uplink_before
                    uplink_before = event["uplink_wire_bytes"]
                if event["step"] >= args.warmup:
                    seconds.append(event["step_seconds"])
                    # entrograd's share: compress, wait, apply and the
                    # front end's own calls; the rest is LibTorch compute.
                    exchange_seconds.append(event["step_seconds"] -
                                            event["forward_backward_seconds"])
                    wire_bytes.append(step_bytes)
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
        aggregator.send_signal(signal.SIGTERM)
        aggregator.wait(timeout=30)
    return {"front_end": front_end, "repeat": repeat, "steps_timed": len(seconds),
            "median_step_seconds": statistics.median(seconds),
            "p90_step_seconds": statistics.quantiles(seconds, n=10)[-1],
            "median_exchange_seconds": statistics.median(exchange_seconds),
            "uplink_bytes_per_rank_step": statistics.mean(wire_bytes)}


def compare(args):
    runs = []
    for repeat in range(args.repeats):
        # Alternate which goes first, so neither always runs on a cooler machine.
        order = ["cpp", "python"] if repeat % 2 == 0 else ["python", "cpp"]
        for front_end in order:
            run = run_once(front_end, args, repeat)
            print(f"{front_end} run {repeat}: median step "
                  f"{run['median_step_seconds'] * 1e3:.2f} ms", flush=True)
            runs.append(run)

    def overall(front_end, key):
        return statistics.median(r[key] for r in runs if r["front_end"] == front_end)

    summary = {front_end: {key: overall(front_end, key) for key in
                           ("median_step_seconds", "p90_step_seconds",
                            "median_exchange_seconds", "uplink_bytes_per_rank_step")}
               for front_end in ("cpp", "python")}
    ratio = summary["python"]["median_step_seconds"] / summary["cpp"]["median_step_seconds"]
    exchange_ratio = (summary["python"]["median_exchange_seconds"] /
                      summary["cpp"]["median_exchange_seconds"])
    result = {"config": {key: getattr(args, key) for key in
                         ("world_size", "steps", "warmup", "repeats", "policy", "rho",
                          "batch_size", "seed", "retain_freed_memory")},
              "runs": runs, "summary": summary, "python_over_cpp": ratio,
              "exchange_python_over_cpp": exchange_ratio}
    Path(args.out, "results.json").write_text(json.dumps(result, indent=2) + "\n")

    print("\n| front end | median step | p90 step | median step minus forward/backward "
          "| uplink bytes per rank-step |")
    print("| --- | --- | --- | --- | --- |")
    for name, front_end in (("C++ entrograd-worker", "cpp"),
                            ("Python entrograd.DistributedOptimizer", "python")):
        row = summary[front_end]
        print(f"| {name} | {row['median_step_seconds'] * 1e3:.2f} ms | "
              f"{row['p90_step_seconds'] * 1e3:.2f} ms | "
              f"{row['median_exchange_seconds'] * 1e3:.2f} ms | "
              f"{row['uplink_bytes_per_rank_step']:,.0f} |")
    print(f"\npython / C++ median step time: {ratio:.3f} "
          f"({(ratio - 1) * 100:+.1f}%; goal: at most +5%)")
    print(f"python / C++ median step minus forward/backward (entrograd's share): "
          f"{exchange_ratio:.3f}")


def main():
    args = parse_args()
    if args.mode == "rank":
        python_rank(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
