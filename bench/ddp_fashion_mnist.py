#!/usr/bin/python3
"""Baseline: Fashion-MNIST CNN trained with PyTorch DistributedDataParallel
(gloo backend, CPU), on the same model, data, data order and
hyperparameters as entrograd's fashion_mnist worker, for side-by-side
comparison.

Run with Debian's python (python3-torch):
  /usr/bin/python3 bench/ddp_fashion_mnist.py --workers 4 --epochs 1 \
      --json_out out/ddp_fashion_mnist.json

What it mirrors from entrograd (workers/fashion_mnist/):
  * data: the gzipped IDX files, normalised (x/255 - 0.2860)/0.3530 in
    float32, images [N,1,28,28], labels int64;
  * model: cnn_model.cc's FashionCnn (454,922 parameters), initialised by
    torch.manual_seed(seed) and PyTorch's default init (entrograd uses
    LibTorch's defaults with the same seed; bitwise equality of the initial
    weights is not relied on);
  * data order: shard_sampler.cc ported exactly (SplitMix64 seed mixing,
    std::mt19937_64, unbiased bounded draws, Fisher-Yates high to low; step
    s takes perm[s*W*B:(s+1)*W*B], rank r its r-th B-slice; floor(N/(W*B))
    steps per epoch). Checked at start-up against the golden orders in
    tests/workers/fashion_mnist/shard_sampler_test.cc;
  * optimiser: SGD(lr, momentum), mean cross-entropy per rank batch; DDP
    averages the gradients over ranks (the dense allreduce).

Measured: training-loop wall time, per-step times (rank 0), test accuracy
and loss on the 10000 test images (rank 0, after training), gradient bytes
per step per rank (4 * #parameters, what DDP allreduces) and the loopback
bytes moved during the training loop (/proc/net/dev "lo" receive+transmit
on rank 0, between barriers). The loopback counters are machine-wide: they
count the whole job (all ranks), and anything else on the machine that uses
loopback at the same time. Every byte sent over lo is counted once as
transmitted and once as received, so rx+tx is twice the bytes sent.
"""

import argparse
import gzip
import json
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


class FashionCnn(nn.Module):
    def __init__(self):
        super().__init__()
        # Registration order = entrograd's named_parameters() order.
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


# ---------------------------------------------------------------------------


def loopback_bytes():
    """(rx, tx) byte counters of the "lo" interface."""
    with open("/proc/net/dev") as f:
        for line in f:
            name, sep, rest = line.partition(":")
            if sep and name.strip() == "lo":
                fields = rest.split()
                return int(fields[0]), int(fields[8])
    raise RuntimeError('no "lo" interface in /proc/net/dev')


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


def worker(rank, args, port, result_queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=args.workers)
    W, B = args.workers, args.batch_size

    train_x, train_y = load_split(args.data_dir, "train")
    n = train_x.shape[0]
    spe = steps_per_epoch(n, W, B)
    if spe == 0:
        raise ValueError(f"{n} samples is less than one global batch ({W} x {B})")

    torch.manual_seed(args.seed)
    model = FashionCnn()
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

    step_times = []
    last_loss = float("nan")
    ddp.train()
    dist.barrier()
    if rank == 0:
        lo_before = loopback_bytes()
    dist.barrier()
    t0 = time.perf_counter()
    step = 0
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
            opt.step()
            step_times.append(time.perf_counter() - ts)
            step += 1
            if rank == 0 and args.log_every and step % args.log_every == 0:
                last_loss = float(loss)
                print(f"[rank0] step {step}/{total_steps} loss {last_loss:.4f} "
                      f"{statistics.median(step_times):.4f}s/step", file=sys.stderr, flush=True)
    dist.barrier()
    seconds = time.perf_counter() - t0
    if rank == 0:
        lo_after = loopback_bytes()
    dist.barrier()

    if rank == 0:
        test_x, test_y = load_split(args.data_dir, "t10k")
        acc, test_loss = evaluate(model, test_x, test_y)
        rx = lo_after[0] - lo_before[0]
        tx = lo_after[1] - lo_before[1]
        result_queue.put({
            "framework": "pytorch-ddp-gloo",
            "torch_version": torch.__version__,
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
            "seconds": seconds,
            "seconds_per_step_median": statistics.median(step_times),
            "seconds_per_step_mean": statistics.fmean(step_times),
            "num_parameters": num_params,
            "gradient_bytes_per_step_per_rank": 4 * num_params,
            "loopback_bytes_total": rx + tx,
            "loopback_bytes_per_step": (rx + tx) / step if step else 0.0,
            "loopback_rx_bytes": rx,
            "loopback_tx_bytes": tx,
            "loopback_note": "machine-wide lo rx+tx during the training loop: "
                             "all ranks of the job (plus any other loopback user); "
                             "each byte sent counts in both rx and tx",
        })
    dist.destroy_process_group()


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
    p.add_argument("--max_steps", type=int, default=None,
                   help="stop after this many steps in total (default: all epochs)")
    p.add_argument("--json_out", default=None)
    p.add_argument("--data_dir", default=DATA_DIR)
    p.add_argument("--log_every", type=int, default=50, help="0 = quiet")
    args = p.parse_args()
    if args.workers < 1 or args.epochs < 1 or args.batch_size < 1:
        p.error("--workers, --epochs and --batch_size must be >= 1")

    check_sampler_port()
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.workers, join=True)
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
