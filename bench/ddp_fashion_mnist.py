#!/usr/bin/python3
"""Baseline: Fashion-MNIST CNN trained with PyTorch DistributedDataParallel
(gloo backend, CPU), on the same model, data, data order and
hyperparameters as entrograd's fashion_mnist worker, for side-by-side
comparison.

Run with Debian's python (python3-torch):
  /usr/bin/python3 bench/ddp_fashion_mnist.py --workers 4 --epochs 1 \
      --json_out out/ddp_fashion_mnist.json

Two ways to start the ranks:
  * spawn (default): this process spawns --workers ranks with
    torch.multiprocessing; they meet on 127.0.0.1 at a free port;
  * single rank: with --rank R --world_size W --master_addr A
    --master_port P this process is rank R alone and joins the gloo group
    whose TCP store rank 0 serves at A:P; rank 0 writes --json_out. This is
    how bench/ddp_link.sh starts one rank per network namespace (each rank
    behind its own emulated link). --ifname sets GLOO_SOCKET_IFNAME, the
    interface gloo binds to (eth0 inside entrograd-netns's namespaces;
    otherwise gloo picks the address the hostname resolves to, which can be
    loopback).

What it mirrors from entrograd (workers/fashion_mnist/):
  * data: the gzipped IDX files, normalised (x/255 - 0.2860)/0.3530 in
    float32, images [N,1,28,28], labels int64;
  * model: cnn_model.cc's FashionCnn, --model cnn (hidden width 128,
    454,922 parameters) or --model wide (the same trunk with hidden width
    8192, 25,832,330 parameters: a 103 MB dense gradient) or --model vgg
    (3 stages of 3x3 convolutions, 777,930 parameters), initialised by
    torch.manual_seed(seed) and PyTorch's default init, except vgg's ReLU
    layers, which get He's normal init with zero bias as in cnn_model.cc
    (entrograd does the same in LibTorch with the same seed; bitwise
    equality of the initial weights is not relied on);
  * data order: shard_sampler.cc ported exactly (SplitMix64 seed mixing,
    std::mt19937_64, unbiased bounded draws, Fisher-Yates high to low; step
    s takes perm[s*W*B:(s+1)*W*B], rank r its r-th B-slice; floor(N/(W*B))
    steps per epoch). Checked at start-up against the golden orders in
    tests/workers/fashion_mnist/shard_sampler_test.cc;
  * optimiser: SGD(lr, momentum), mean cross-entropy per rank batch; DDP
    averages the gradients over ranks (the dense allreduce).

Measured: training-loop wall time, per-step times (rank 0), test accuracy
and loss on the 10000 test images (rank 0), gradient bytes per step per
rank (4 * #parameters, what DDP allreduces) and the loopback bytes moved
during the training loop (/proc/net/dev "lo" receive+transmit on rank 0,
between barriers). The loopback counters are machine-wide (or namespace-
wide): they count the whole job (all ranks), and anything else on the
machine that uses loopback at the same time. Every byte sent over lo is
counted once as transmitted and once as received, so rx+tx is twice the
bytes sent. With --ifname, every rank's counters of that interface
during the loop are reported too (in separate namespaces: each rank's own
link, so their tx sum is every byte on the wire once).

Evaluation during training (--eval_every N): after every N-th step, and
at each epoch's end, as entrograd's worker does (with 0, only once, after
the loop, untimed), all ranks meet at a barrier, rank 0 evaluates, and all
meet again; the interval between the two barriers is the evaluation time.
"seconds" is the raw loop wall time (evaluations included); "train_seconds"
= seconds - eval_seconds, the training time alone. Each entry of "evals"
gives "seconds" (raw, since the loop started, barrier-aligned) and
"train_seconds" (the same minus the evaluations before it), so
time-to-accuracy compares like for like with entrograd's worker, which also
pauses training while rank 0 evaluates and reports train_seconds the same
way.

Per-step breakdown (rank 0; median and nearest-rank p90 over steps, as
entrograd-launch's summary):
  * forward_backward_seconds: batch gather + forward + backward. In DDP the
    gradient allreduce overlaps backward (bucketed hooks) and backward()
    returns only once every bucket is reduced, so this includes the
    communication;
  * wait_seconds: from the end of backward until the gradients are ready.
    For DDP this is 0 by construction (backward() already blocked on the
    allreduce); it is reported as 0 so the columns line up with entrograd's;
  * apply_seconds: optimizer.step();
  * step_seconds: the whole step (zero_grad included).
--compute_only runs the same loop under ddp.no_sync(): no allreduce at all,
so its step time is the compute-only time per step (the denominator of the
"ideal speed-up"). The replicas then drift apart; the accuracy reported is
rank 0's local model's.
"""

import argparse
import contextlib
import ctypes
import gzip
import json
import math
import os
import socket
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN = 0.2860
STD = 0.3530

# ---------------------------------------------------------------------------
# Data


def _read_idx(path, expected_magic):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    if magic != expected_magic:
        raise ValueError(f"{path}: magic {magic:#x}, expected {expected_magic:#x}")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


def load_split(data_dir, prefix):
    images = _read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), 0x803)
    labels = _read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), 0x801)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{prefix}: {images.shape[0]} images, {labels.shape[0]} labels")
    # float32 throughout, in entrograd's order: /255, -mean, /std.
    x = images.astype(np.float32)
    x /= np.float32(255.0)
    x -= np.float32(MEAN)
    x /= np.float32(STD)
    x = torch.from_numpy(x).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


# ---------------------------------------------------------------------------
# entrograd's ShardSampler, ported exactly.

MASK64 = (1 << 64) - 1


def mix64(x):
    """SplitMix64's finaliser (shard_sampler.cc Mix64)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


class MT19937_64:
    """std::mt19937_64 (the C++ standard pins its output sequence)."""

    N, M = 312, 156
    MATRIX_A = 0xB5026F5AA96619E9
    UPPER = 0xFFFFFFFF80000000
    LOWER = 0x7FFFFFFF

    def __init__(self, seed=5489):
        mt = [0] * self.N
        mt[0] = seed & MASK64
        for i in range(1, self.N):
            prev = mt[i - 1]
            mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64
        self.mt = mt
        self.index = self.N

    def _twist(self):
        mt, n, m = self.mt, self.N, self.M
        upper, lower, a = self.UPPER, self.LOWER, self.MATRIX_A
        for i in range(n):
            y = (mt[i] & upper) | (mt[(i + 1) % n] & lower)
            v = mt[(i + m) % n] ^ (y >> 1)
            if y & 1:
                v ^= a
            mt[i] = v
        self.index = 0

    def __call__(self):
        if self.index >= self.N:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64


def uniform_below(engine, bound):
    threshold = ((1 << 64) - bound) % bound  # (0 - bound) % bound in uint64
    while True:
        x = engine()
        if x >= threshold:
            return x % bound


def epoch_permutation(num_samples, seed, epoch):
    perm = list(range(num_samples))
    engine = MT19937_64(mix64(mix64(seed & MASK64) ^ (epoch & MASK64)))
    for i in range(num_samples, 1, -1):
        j = uniform_below(engine, i)
        perm[i - 1], perm[j] = perm[j], perm[i - 1]
    return perm


def steps_per_epoch(num_samples, world_size, batch_size):
    if num_samples <= 0 or world_size <= 0 or batch_size <= 0:
        return 0
    return num_samples // world_size // batch_size


def check_sampler_port():
    """The engine check and golden orders of shard_sampler_test.cc."""
    e = MT19937_64()
    for _ in range(9999):
        e()
    assert e() == 9981545732273789042, "mt19937_64 port is wrong"
    assert epoch_permutation(10, 42, 0) == [2, 0, 4, 7, 8, 3, 5, 1, 9, 6]
    assert epoch_permutation(10, 42, 1) == [2, 8, 7, 3, 6, 4, 0, 9, 5, 1]
    assert epoch_permutation(10, 7, 0) == [5, 6, 2, 8, 4, 9, 7, 3, 1, 0]
    assert epoch_permutation(1000, 42, 3)[:8] == [602, 182, 304, 608, 484, 426, 708, 352]


# ---------------------------------------------------------------------------
# Model: workers/fashion_mnist/cnn_model.cc


HIDDEN_WIDTH = {"cnn": 128, "wide": 8192, "vgg": 256}  # cnn_model.cc HiddenWidthOf


class FashionCnn(nn.Module):
    def __init__(self, model="cnn"):
        super().__init__()
        hidden_width = HIDDEN_WIDTH[model]
        # Registration order = entrograd's named_parameters() order.
        self.stages = []
        if model == "vgg":
            # Three stages of three 3x3 convolutions, max-pool after each.
            in_channels = 1
            for stage, channels in enumerate((32, 64, 128), start=1):
                for i in range(1, 4):
                    name = f"conv{stage}_{i}"
                    setattr(self, name, nn.Conv2d(in_channels, channels, 3, padding=1))
                    self.stages.append((name, i == 3))
                    in_channels = channels
            flat = 128 * 3 * 3
        else:
            self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
            self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
            self.stages = [("conv1", True), ("conv2", True)]
            flat = 64 * 7 * 7
        self.fc1 = nn.Linear(flat, hidden_width)
        self.fc2 = nn.Linear(hidden_width, 10)
        if model == "vgg":
            # cnn_model.cc InitialiseForReluDepth: the default init leaves
            # 10 ReLU layers untrainable; He init on all but fc2.
            relu_layers = [getattr(self, name) for name, _ in self.stages] + [self.fc1]
            with torch.no_grad():
                for layer in relu_layers:
                    nn.init.kaiming_normal_(layer.weight, a=0.0, mode="fan_in",
                                            nonlinearity="relu")
                    nn.init.zeros_(layer.bias)

    def forward(self, x):
        for name, pool_after in self.stages:
            x = F.relu(getattr(self, name)(x))
            if pool_after:
                x = F.max_pool2d(x, 2)
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


# ---------------------------------------------------------------------------


def interface_bytes(name="lo"):
    """(rx, tx) byte counters of interface `name` (this network namespace)."""
    with open("/proc/net/dev") as f:
        for line in f:
            iface, sep, rest = line.partition(":")
            if sep and iface.strip() == name:
                fields = rest.split()
                return int(fields[0]), int(fields[8])
    raise RuntimeError(f'no "{name}" interface in /proc/net/dev')


def loopback_bytes():
    """(rx, tx) byte counters of the "lo" interface."""
    return interface_bytes("lo")


def median_p90(values):
    """Median and nearest-rank 90th percentile (entrograd-launch's)."""
    if not values:
        return 0.0, 0.0
    v = sorted(values)
    n = len(v)
    rank = min(max(math.ceil(0.9 * n), 1), n)
    return statistics.median(v), v[rank - 1]


@torch.no_grad()
def evaluate(model, images, labels, batch=1000):
    model.eval()
    loss_sum = 0.0
    correct = 0
    for i in range(0, images.shape[0], batch):
        logits = model(images[i:i + batch])
        y = labels[i:i + batch]
        loss_sum += float(F.cross_entropy(logits, y, reduction="sum"))
        correct += int((logits.argmax(1) == y).sum())
    n = images.shape[0]
    return correct / n, loss_sum / n


def retain_freed_memory():
    """What entrograd-worker does by default (--retain_freed_memory,
    client_lib/include/entrograd/torch/retain_freed_memory.h): glibc keeps
    freed blocks up to 32 MiB and never trims the heap, so a step reuses the
    last step's pages instead of faulting them in again. DDP gets the same,
    so that a comparison measures the exchange, not the allocator."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    if (libc.mallopt(m_mmap_threshold, 32 << 20) != 1 or
            libc.mallopt(m_trim_threshold, 1 << 30) != 1):
        raise SystemExit("--retain_freed_memory: glibc refused mallopt")


def run_rank(rank, world_size, init_method, args):
    """Trains as rank `rank` of `world_size`; rank 0 returns the result
    dict, the other ranks None."""
    torch.set_num_threads(1)
    if args.retain_freed_memory:
        retain_freed_memory()
    if args.ifname:
        # gloo binds its pairs to this interface's address (read when the
        # process group is created).
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    dist.init_process_group("gloo", init_method=init_method,
                            rank=rank, world_size=world_size)
    W, B = world_size, args.batch_size
    # Ranks started separately (--rank) must agree on what they run: a rank
    # under --compute_only never allreduces, and the others would hang.
    config = {k: getattr(args, k) for k in ("model", "compute_only", "batch_size", "epochs",
                                            "max_steps", "eval_every", "eval_samples",
                                            "seed", "lr",
                                            "momentum", "validation")}
    configs = [None] * W
    dist.all_gather_object(configs, config)
    for r, other in enumerate(configs):
        if other != config:
            raise ValueError(f"rank {rank}: rank {r} runs {other}, this rank {config}")

    train_x, train_y = load_split(args.data_dir, "train")
    # --validation N: the last N training images are held out, as
    # entrograd-worker --validation does; the sampler then permutes the
    # first n - N, so the data order stays the worker's.
    if not 0 <= args.validation < train_x.shape[0]:
        raise ValueError(f"--validation {args.validation} must be in "
                         f"[0, {train_x.shape[0]}) (the training images)")
    cut = train_x.shape[0] - args.validation
    val_x, val_y = train_x[cut:], train_y[cut:]
    train_x, train_y = train_x[:cut], train_y[:cut]
    n = train_x.shape[0]
    spe = steps_per_epoch(n, W, B)
    if spe == 0:
        raise ValueError(f"{n} samples is less than one global batch ({W} x {B})")

    torch.manual_seed(args.seed)
    model = FashionCnn(args.model)
    num_params = sum(p.numel() for p in model.parameters())
    # DDP broadcasts rank 0's parameters at construction, so all ranks start
    # equal regardless.
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)

    total_steps = spe * args.epochs
    if args.max_steps is not None:
        total_steps = min(total_steps, args.max_steps)

    # Permutations are computed before the timed loop (pure Python, ~0.3 s
    # per epoch), so the loop times only training and communication.
    perms = []
    for epoch in range(args.epochs):
        if epoch * spe >= total_steps:
            break
        perms.append(torch.tensor(epoch_permutation(n, args.seed, epoch), dtype=torch.int64))

    test_x = test_y = None
    if rank == 0:
        test_x, test_y = load_split(args.data_dir, "t10k")
        if args.eval_samples > 0:
            # The first N test images, as entrograd-worker --eval_samples.
            test_x, test_y = test_x[:args.eval_samples], test_y[:args.eval_samples]

    # Rank 0's per-step phases (see the module docstring).
    fb_times, wait_times, apply_times, step_times = [], [], [], []
    evals = []
    eval_seconds = 0.0  # barrier-to-barrier evaluation time, excluded
    last_loss = float("nan")

    def evaluate_now(step):
        """All ranks: barrier, rank 0 evaluates, barrier. Returns the
        evaluation's wall time (the same interval on every rank)."""
        dist.barrier()
        te = time.perf_counter()
        if rank == 0:
            acc, test_loss = evaluate(model, test_x, test_y)
            ddp.train()
            evals.append({"step": step,
                          "seconds": te - t0,
                          "train_seconds": te - t0 - eval_seconds,
                          "test_accuracy": acc,
                          "test_loss": test_loss})
            print(f"[rank0] eval at step {step}: accuracy {acc:.4f} loss {test_loss:.4f}",
                  file=sys.stderr, flush=True)
        dist.barrier()
        return time.perf_counter() - te

    # --compute_only: no allreduce at all (gradients stay local).
    sync = ddp.no_sync() if args.compute_only else contextlib.nullcontext()
    ddp.train()
    dist.barrier()
    if rank == 0:
        lo_before = loopback_bytes()
    if args.ifname:
        if_before = interface_bytes(args.ifname)
    dist.barrier()
    t0 = time.perf_counter()
    step = 0
    with sync:
        for epoch, perm in enumerate(perms):
            for s in range(spe):
                if step >= total_steps:
                    break
                ts = time.perf_counter()
                begin = (s * W + rank) * B
                idx = perm[begin:begin + B]
                x, y = train_x[idx], train_y[idx]
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(ddp(x), y)
                loss.backward()  # DDP allreduces (averages) gradients here
                t_backward = time.perf_counter()
                # Gradients are ready: DDP's backward() returned only after
                # its allreduce finished, so there is nothing to wait for.
                t_ready = t_backward
                opt.step()
                t_end = time.perf_counter()
                fb_times.append(t_backward - ts)
                wait_times.append(t_ready - t_backward)
                apply_times.append(t_end - t_ready)
                step_times.append(t_end - ts)
                step += 1
                if rank == 0 and args.log_every and step % args.log_every == 0:
                    last_loss = float(loss)
                    print(f"[rank0] step {step}/{total_steps} loss {last_loss:.4f} "
                          f"{statistics.median(step_times):.4f}s/step",
                          file=sys.stderr, flush=True)
                if args.eval_every > 0 and (step % args.eval_every == 0 or s == spe - 1
                                            or step == total_steps):
                    eval_seconds += evaluate_now(step)
    dist.barrier()
    seconds = time.perf_counter() - t0
    if rank == 0:
        lo_after = loopback_bytes()
    if args.ifname:
        if_after = interface_bytes(args.ifname)
    dist.barrier()
    if_per_rank = None
    if args.ifname:
        if_per_rank = [None] * W
        dist.all_gather_object(if_per_rank, {"rank": rank,
                                             "rx_bytes": if_after[0] - if_before[0],
                                             "tx_bytes": if_after[1] - if_before[1]})

    result = None
    if rank == 0:
        if args.eval_every == 0:
            # Once, after the loop (outside the timed interval).
            acc, test_loss = evaluate(model, test_x, test_y)
            evals.append({"step": step, "seconds": seconds, "train_seconds": seconds,
                          "test_accuracy": acc, "test_loss": test_loss})
        acc, test_loss = evals[-1]["test_accuracy"], evals[-1]["test_loss"]
        validation_accuracy = None
        if args.validation > 0:
            validation_accuracy, _ = evaluate(model, val_x, val_y)
        rx = lo_after[0] - lo_before[0]
        tx = lo_after[1] - lo_before[1]
        result = {
            "framework": "pytorch-ddp-gloo",
            "torch_version": torch.__version__,
            "mode": "single_rank" if args.rank is not None else "spawn",
            "init_method": init_method,
            "model": args.model,
            "compute_only": args.compute_only,
            "workers": W,
            "epochs": args.epochs,
            "steps": step,
            "steps_per_epoch": spe,
            "batch_size": B,
            "lr": args.lr,
            "momentum": args.momentum,
            "seed": args.seed,
            "data_order": "entrograd ShardSampler (exact port)",
            "test_accuracy": acc,
            "test_loss": test_loss,
            "validation": args.validation,
            "validation_accuracy": validation_accuracy,
            "seconds": seconds,
            "eval_seconds": eval_seconds,
            "train_seconds": seconds - eval_seconds,
            "eval_every": args.eval_every,
            "evals": evals,
            "seconds_per_step_median": statistics.median(step_times) if step_times else 0.0,
            "seconds_per_step_mean": statistics.fmean(step_times) if step_times else 0.0,
            "step_breakdown_rank": 0,
            "step_breakdown_samples": len(step_times),
        }
        for name, values in (("forward_backward", fb_times), ("wait", wait_times),
                             ("apply", apply_times), ("step", step_times)):
            med, p90 = median_p90(values)
            result[f"{name}_seconds_median"] = med
            result[f"{name}_seconds_p90"] = p90
        result.update({
            "breakdown_note": "rank 0, per step; forward_backward includes DDP's "
                              "allreduce (overlapped with backward, which blocks on "
                              "it), so wait is 0 by construction"
                              + ("; compute_only: no allreduce (ddp.no_sync())"
                                 if args.compute_only else ""),
            "num_parameters": num_params,
            "gradient_bytes_per_step_per_rank": 0 if args.compute_only else 4 * num_params,
            "loopback_bytes_total": rx + tx,
            "loopback_bytes_per_step": (rx + tx) / step if step else 0.0,
            "loopback_rx_bytes": rx,
            "loopback_tx_bytes": tx,
            "loopback_note": "machine-wide lo rx+tx during the training loop: "
                             "all ranks of the job (plus any other loopback user); "
                             "each byte sent counts in both rx and tx",
        })
        if args.ifname:
            if_tx = sum(r["tx_bytes"] for r in if_per_rank)
            result.update({
                "interface": args.ifname,
                "interface_rx_bytes": if_after[0] - if_before[0],
                "interface_tx_bytes": if_after[1] - if_before[1],
                "interface_bytes_per_rank": if_per_rank,
                "interface_tx_bytes_total": if_tx,
                "interface_tx_bytes_per_step_per_rank": if_tx / step / W if step else 0.0,
                "interface_note": "--ifname's counters during the training loop, "
                                  "between barriers: interface_rx/tx_bytes rank 0's, "
                                  "interface_bytes_per_rank every rank's (in its own "
                                  "namespace, its own link only; without namespaces "
                                  "the ranks share the interface and these overlap)",
            })
    dist.destroy_process_group()
    return result


def spawned_rank(rank, args, init_method, result_queue):
    result = run_rank(rank, args.workers, init_method, args)
    if result is not None:
        result_queue.put(result)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)  # entrograd worker's default
    p.add_argument("--model", choices=sorted(HIDDEN_WIDTH), default="cnn",
                   help="cnn (hidden width 128, 454,922 parameters), wide "
                        "(hidden width 8192, 25,832,330 parameters) or vgg "
                        "(9 3x3 convolutions, 777,930 parameters)")
    p.add_argument("--max_steps", type=int, default=None,
                   help="stop after this many steps in total (default: all epochs)")
    p.add_argument("--eval_every", type=int, default=0,
                   help="rank 0 evaluates every N steps and at each epoch's end, "
                        "evaluation time excluded from train_seconds "
                        "(0: once, after training)")
    p.add_argument("--eval_samples", type=int, default=0,
                   help="evaluate on the first N test images (0: all 10,000)")
    p.add_argument("--compute_only", action="store_true",
                   help="run the loop under ddp.no_sync(): no allreduce, "
                        "the compute-only step time")
    p.add_argument("--rank", type=int, default=None,
                   help="run only this rank (single-rank mode) instead of "
                        "spawning --workers ranks")
    p.add_argument("--world_size", type=int, default=None,
                   help="single-rank mode: number of ranks (default --workers)")
    p.add_argument("--master_addr", default="127.0.0.1",
                   help="single-rank mode: address of rank 0's TCP store")
    p.add_argument("--master_port", type=int, default=29500,
                   help="single-rank mode: port of rank 0's TCP store")
    p.add_argument("--ifname", default=None,
                   help="interface gloo binds to (sets GLOO_SOCKET_IFNAME); "
                        "default: gloo's choice")
    p.add_argument("--retain_freed_memory", action=argparse.BooleanOptionalAction, default=True,
                   help="glibc keeps what a step frees for the next step, as "
                        "entrograd-worker does by default")
    p.add_argument("--validation", type=int, default=0,
                   help="hold out the last N training images and report their "
                        "accuracy as validation_accuracy (entrograd-worker --validation)")
    p.add_argument("--json_out", default=None)
    p.add_argument("--data_dir", default=DATA_DIR)
    p.add_argument("--log_every", type=int, default=50, help="0 = quiet")
    args = p.parse_args()
    if args.workers < 1 or args.epochs < 1 or args.batch_size < 1:
        p.error("--workers, --epochs and --batch_size must be >= 1")
    if args.eval_every < 0:
        p.error("--eval_every must be >= 0")
    if args.max_steps is not None and args.max_steps < 1:
        p.error("--max_steps must be >= 1")

    check_sampler_port()
    if args.rank is not None:
        world_size = args.world_size if args.world_size is not None else args.workers
        if world_size < 1 or not 0 <= args.rank < world_size:
            p.error(f"--rank {args.rank} is not in [0, --world_size {world_size})")
        args.workers = world_size
        result = run_rank(args.rank, world_size,
                          f"tcp://{args.master_addr}:{args.master_port}", args)
        if result is None:
            return
    else:
        if args.world_size is not None and args.world_size != args.workers:
            p.error("--world_size is for single-rank mode (--rank); use --workers")
        ctx = mp.get_context("spawn")
        queue = ctx.SimpleQueue()
        mp.spawn(spawned_rank, args=(args, f"tcp://127.0.0.1:{free_port()}", queue),
                 nprocs=args.workers, join=True)
        result = queue.get()
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_out:
        d = os.path.dirname(args.json_out)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(args.json_out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
