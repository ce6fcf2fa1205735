#!/usr/bin/python3
"""One rank of a Fashion-MNIST job on entrograd, from Python.

Start an aggregator, then one process per rank:

  build/aggregator/entrograd-aggregator --listen=127.0.0.1:50051 & aggregator=$!
  for r in 0 1; do
    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_fashion_mnist.py \\
        --shards=127.0.0.1:50051 --world_size=2 --rank=$r --steps=200 & ranks+=($!)
  done; wait "${ranks[@]}"; kill $aggregator

Each rank trains the `cnn` model of entrograd-worker on its share of the
training set (every world_size-th image of a seeded shuffle). The model, its
seeded initialisation and the compression and SGD options are the worker's
defaults, so Python ranks can also join C++ entrograd-worker ranks of one job
(same --job_id, --seed, --lr, --rho, --policy; the worker shards the data
its own way). Every rank prints the hash of its parameters at the end (equal
on every rank); rank 0 the test accuracy. Needs Debian's
dataset-fashion-mnist.
"""

import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
from torch import nn

import entrograd

MEAN, STD = 0.2860, 0.3530  # workers/fashion_mnist/fashion_mnist.h


class FashionCnn(nn.Module):
    """entrograd-worker's `cnn` (workers/fashion_mnist/cnn_model.h): same
    layers and names, hence the same layer table on the wire."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def read_idx(path):
    with gzip.open(path, "rb") as file:
        data = file.read()
    dims = data[3]
    shape = struct.unpack(f">{dims}I", data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32)).unsqueeze(1).div_(255).sub_(MEAN).div_(STD)
    return x, torch.from_numpy(labels.astype(np.int64))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", default="127.0.0.1:50051")
    parser.add_argument("--job_id", default="fashion-mnist-python")
    parser.add_argument("--world_size", type=int, default=1)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--policy", default="entropy")
    parser.add_argument("--rho", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    torch.set_num_threads(1)
    entrograd.retain_freed_memory()  # as entrograd-worker does by default
    train_x, train_y = load_split(args.data_dir, "train")
    torch.manual_seed(args.seed)  # every rank builds the same initial model
    model = FashionCnn()
    client = entrograd.Client(shards=args.shards.split(","), job_id=args.job_id,
                              rank=args.rank, world_size=args.world_size)
    optimizer = entrograd.DistributedOptimizer(
        model.named_parameters(), client, lr=args.lr, policy=args.policy, rho=args.rho,
        dense_below=1000, momentum=0.9)
    order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(args.seed))
    mine = order[args.rank::args.world_size]
    start = time.monotonic()
    uplink = dense = 0
    for step in range(args.steps):
        begin = (step * args.batch_size) % (len(mine) - args.batch_size)
        index = mine[begin:begin + args.batch_size]
        loss = nn.functional.cross_entropy(model(train_x[index]), train_y[index])
        loss.backward()  # C++ hooks compress and send each layer
        stats = optimizer.step()
        uplink += stats.uplink_wire_bytes
        dense += stats.uplink_dense_bytes
        if step % 20 == 0 or step == args.steps - 1:
            print(f"rank {args.rank} step {step} loss {loss.item():.4f} "
                  f"wait {stats.wait_seconds * 1e3:.1f} ms "
                  f"compression {dense / max(uplink, 1):.0f}x", flush=True)
    print(f"rank {args.rank}: {args.steps} steps in {time.monotonic() - start:.1f} s, "
          f"parameters hash {entrograd.hash_parameters(list(model.parameters())):016x} "
          "(equal on every rank)", flush=True)
    if args.rank == 0:
        test_x, test_y = load_split(args.data_dir, "t10k")
        with torch.no_grad():
            accuracy = (model(test_x).argmax(1) == test_y).float().mean().item()
        print(f"test accuracy {accuracy:.4f}")
    client.close()


if __name__ == "__main__":
    main()
