#!/usr/bin/python3
"""Chaos soak: W entrograd-worker ranks train the Fashion-MNIST CNN through S
aggregator shards while the shards are SIGKILLed and restarted at random
points; the final weights must be bitwise equal to an uninterrupted run with
the same seed (docs/DESIGN.md "Stateless aggregator, nothing lost").

Two runs with the same flags and seed: a reference run with no kills, then
the chaos run. Shards listen on fixed loopback ports, chosen free at start,
so a restarted shard comes back at the address every worker has. Each kill
picks a shard from a shuffled cycle (every shard is killed), waits a random
time, SIGKILLs it, leaves it down for a random moment and restarts it.
Kills are counted only while every worker still runs.

Passes (exit 0) when every rank of both runs exits 0, all ranks of a run
report the same params_hash, the chaos hash equals the reference hash, at
least --kills kills landed, and no child is left running. Exit 1 otherwise,
77 when Fashion-MNIST is not installed. Writes chaos_soak.json in --out.

Usage (full soak, docs/BENCHMARKS.md):
  /usr/bin/python3 bench/chaos_soak.py --build build --steps 60 --kills 10
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build",
                        help="build tree holding the binaries")
    parser.add_argument("--aggregator", help="entrograd-aggregator binary "
                        "(default: BUILD/aggregator/entrograd-aggregator)")
    parser.add_argument("--worker", help="entrograd-worker binary (default: "
                        "BUILD/workers/fashion_mnist/entrograd-worker)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--kills", type=int, default=10,
                        help="least number of kills that must land")
    parser.add_argument("--seed", type=int, default=12,
                        help="seed of the kill schedule (the model's seed is "
                        "the worker's default, the same in both runs)")
    parser.add_argument("--round_timeout", default="10s",
                        help="the shards' --round_timeout")
    parser.add_argument("--run_timeout", type=float, default=600,
                        help="seconds each run may take before it fails")
    parser.add_argument("--out", default="out/chaos_soak")
    return parser.parse_args()


def free_ports(count):
    """Ports free now on 127.0.0.1 (held open together so they differ)."""
    sockets = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class Children:
    """Every child this script starts: killed (group and all) and reaped at
    the end whatever happened, so nothing outlives the soak."""

    def __init__(self):
        self.procs = []

    def start(self, argv, log_path):
        log = open(log_path, "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def kill_all(self):
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()

    def leftovers(self):
        return [p.pid for p in self.procs if p.poll() is None]


class Shard:
    """One aggregator on a fixed port; start() waits for its port line."""

    def __init__(self, args, children, index, port, log_dir):
        self.args, self.children = args, children
        self.index, self.port = index, port
        self.log = os.path.join(log_dir, "shard%d.log" % index)
        self.proc = None

    def start(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while True:
            start = os.path.getsize(self.log) if os.path.exists(self.log) else 0
            self.proc = self.children.start(
                [self.args.aggregator, "--listen=127.0.0.1:%d" % self.port,
                 "--metrics_listen=", "--log_level=warning",
                 "--round_timeout=" + self.args.round_timeout,
                 "--shard_name=shard%d" % self.index], self.log)
            while time.monotonic() < deadline:
                with open(self.log, "rb") as f:
                    f.seek(start)
                    if b"serving on port" in f.read():
                        return
                if self.proc.poll() is not None:
                    break  # e.g. the port is still held: try again
                time.sleep(0.02)
            if time.monotonic() >= deadline:
                raise RuntimeError("shard %d did not start on port %d; see %s"
                                   % (self.index, self.port, self.log))
            time.sleep(0.1)

    def kill(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def worker_argv(args, rank, addresses, out_dir):
    return [args.worker, "--shards=" + ",".join(addresses),
            "--world_size=%d" % args.workers, "--rank=%d" % rank,
            "--job_id=chaos-soak", "--model=cnn", "--policy=entropy",
            "--rho=0.01", "--batch_size=32", "--lr=0.05",
            "--max_steps=%d" % args.steps, "--eval_samples=100",
            "--threads=1", "--out=%s/rank%d" % (out_dir, rank)]


def done_event(log_path):
    """The worker's "done" JSON event, or None."""
    with open(log_path, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            if line.startswith("{") and '"event":"done"' in line:
                return json.loads(line)
    return None


def run(args, children, name, with_kills, rng):
    """One training run; returns its summary (hashes, kills, reconnects)."""
    run_dir = os.path.join(args.out, name)
    os.makedirs(run_dir, exist_ok=True)
    ports = free_ports(args.shards)
    shards = [Shard(args, children, i, p, run_dir) for i, p in enumerate(ports)]
    for shard in shards:
        shard.start()
    addresses = ["127.0.0.1:%d" % p for p in ports]
    workers = [children.start(worker_argv(args, r, addresses, run_dir),
                              os.path.join(run_dir, "rank%d.log" % r))
               for r in range(args.workers)]
    started = time.monotonic()
    deadline = started + args.run_timeout
    kills = []
    # Spread the kills over about the reference run's length; each one
    # slows the run a little, so they keep landing until the end.
    gap = args.kill_gap
    order = []
    next_kill = started + rng.uniform(0.5, 1.5) * gap
    while any(w.poll() is None for w in workers):
        now = time.monotonic()
        if now > deadline:
            raise RuntimeError("%s run exceeded %.0f s" % (name, args.run_timeout))
        if with_kills and now >= next_kill and all(
                w.poll() is None for w in workers):
            if not order:
                order = list(range(args.shards))
                rng.shuffle(order)
            shard = shards[order.pop()]
            shard.kill()
            kills.append({"shard": shard.index,
                          "at_seconds": round(now - started, 3)})
            time.sleep(rng.uniform(0.0, 0.5))  # down for a moment
            shard.start()
            next_kill = time.monotonic() + rng.uniform(0.5, 1.5) * gap
        time.sleep(0.01)
    elapsed = time.monotonic() - started
    ranks = []
    for r, w in enumerate(workers):
        event = done_event(os.path.join(run_dir, "rank%d.log" % r))
        ranks.append({"rank": r, "exit": w.returncode,
                      "params_hash": event and event.get("params_hash"),
                      "reconnects": event and event.get("reconnects")})
    for shard in shards:
        shard.kill()
    return {"seconds": round(elapsed, 2), "kills": kills, "ranks": ranks}


def check(reference, chaos, args):
    """The failures, as sentences (empty: the soak passed)."""
    failures = []
    for name, result in (("reference", reference), ("chaos", chaos)):
        for rank in result["ranks"]:
            if rank["exit"] != 0 or not rank["params_hash"]:
                failures.append("%s run: rank %d exited %s without a done "
                                "event" % (name, rank["rank"], rank["exit"])
                                if not rank["params_hash"] else
                                "%s run: rank %d exited %s" %
                                (name, rank["rank"], rank["exit"]))
        hashes = {r["params_hash"] for r in result["ranks"]}
        if len(hashes) != 1:
            failures.append("%s run: ranks disagree: %s" % (name, sorted(
                map(str, hashes))))
    expected = reference["ranks"][0]["params_hash"]
    for rank in chaos["ranks"]:
        if rank["params_hash"] != expected:
            failures.append("chaos run: rank %d params_hash %s != reference %s"
                            % (rank["rank"], rank["params_hash"], expected))
    if len(chaos["kills"]) < args.kills:
        failures.append("only %d kills landed while training ran (need %d): "
                        "use more --steps" % (len(chaos["kills"]), args.kills))
    return failures


def main():
    args = parse_args()
    args.aggregator = args.aggregator or os.path.join(
        args.build, "aggregator", "entrograd-aggregator")
    args.worker = args.worker or os.path.join(
        args.build, "workers", "fashion_mnist", "entrograd-worker")
    if not os.path.exists(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz")):
        print("chaos_soak: SKIP: Fashion-MNIST is not installed in %s "
              "(apt-get install dataset-fashion-mnist)" % DATA_DIR)
        return 77
    for binary in (args.aggregator, args.worker):
        if not os.access(binary, os.X_OK):
            print("chaos_soak: %s is not built" % binary, file=sys.stderr)
            return 1
    os.makedirs(args.out, exist_ok=True)
    args.out = tempfile.mkdtemp(prefix="run-", dir=args.out)
    rng = random.Random(args.seed)
    children = Children()
    try:
        args.kill_gap = 1.0
        reference = run(args, children, "reference", False, rng)
        # About kills + 2 gaps fit in the reference run's length.
        args.kill_gap = max(0.2, reference["seconds"] / (args.kills + 2))
        chaos = run(args, children, "chaos", True, rng)
    finally:
        children.kill_all()
    leftovers = children.leftovers()
    failures = check(reference, chaos, args)
    if leftovers:
        failures.append("children still running: %s" % leftovers)
    summary = {
        "workers": args.workers, "shards": args.shards, "steps": args.steps,
        "round_timeout": args.round_timeout, "seed": args.seed,
        "reference": reference, "chaos": chaos,
        "kills": len(chaos["kills"]),
        "reconnects": sum(r["reconnects"] or 0 for r in chaos["ranks"]),
        "hash_equal": bool(reference["ranks"][0]["params_hash"]) and all(
            r["params_hash"] == reference["ranks"][0]["params_hash"]
            for r in reference["ranks"] + chaos["ranks"]),
        "failures": failures,
    }
    path = os.path.join(args.out, "chaos_soak.json")
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
    print("chaos soak: %d workers, %d shards, %d steps; reference %.1f s, "
          "chaos %.1f s with %d kills (shards %s), %d reconnects" % (
              args.workers, args.shards, args.steps, reference["seconds"],
              chaos["seconds"], summary["kills"],
              ",".join(str(k["shard"]) for k in chaos["kills"]),
              summary["reconnects"]))
    print("reference params_hash %s, chaos params_hash %s: %s" % (
        reference["ranks"][0]["params_hash"], chaos["ranks"][0]["params_hash"],
        "bitwise equal" if summary["hash_equal"] else "DIFFERENT"))
    for failure in failures:
        print("FAIL: " + failure)
    print("report: " + path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
