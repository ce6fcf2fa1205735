#!/usr/bin/env python3
"""What would a tighter index code save at 1000x?  (docs/BENCHMARKS.md,
"The index at 1000x")

At rho 0.00155 with e5m2 values an entry costs about 2.3 B up and 2.6 B
down, more than half of it index (the delta varint, IndexEncoding
kDeltaVarint). This study trains the `cnn` model as 4 ranks in one process
(the compression core of every rank through entrograd.LayerCompressor,
top-k with momentum correction, every layer compressed; the ranks' sparse
updates summed and cut to global top-k, the largest rank's k entries of
largest magnitude, as the aggregator does with --merged_keep_factor=1) and,
for every message each rank would send and the aggregator would answer,
costs its indices under several codes:

- varint: the delta varint the codec sends today (first index, then gap-1);
- rice: a Golomb-Rice code of gap-1 with the best parameter for that
  message (plus 5 bits to name it), the usual choice for geometric gaps;
- buckets: the gap-1 values in power-of-two buckets (0, 1, 2-3, 4-7, ...),
  the bucket entropy-coded with its frequencies pooled per layer over the
  run and the offset in the bucket sent raw: about what an adaptive
  arithmetic coder of the gaps would reach, without the cost of its table;
- random: log2 C(n, k), the bits to name k positions of n with no
  structure at all (the bound for uniformly random positions).

It also counts how many of a message's indices the same sender sent the
step before (the same rank's previous message of that layer; for the
downlink, the previous merged update): what a code relative to the last
step could exploit.

Simplifications: the ranks never put back the entries global top-k left
out (the real optimizer does, ALGORITHM.md 7), values are float32 (e5m2
rounding changes which entries are selected only a little), and the data
order is a plain shuffle, not the workers' sampler. The indices'
statistics, not the accuracy, are what is measured.

    PYTHONPATH=build/python /usr/bin/python3 bench/index_code_study.py --steps 300 \
        --out out/index_code
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_fashion_mnist as data  # noqa: E402  (load_split, FashionCnn)

RICE_PARAMETERS = range(0, 20)


def varint_bytes(gaps):
    """LEB128 bytes of each gap-1 value (the first index counts as a gap)."""
    return int(np.sum(1 + (gaps >= 1 << 7) + (gaps >= 1 << 14) + (gaps >= 1 << 21)
                      + (gaps >= 1 << 28)))


def rice_bits(gaps):
    """Bits of the best Golomb-Rice code of the gaps, with 5 bits naming it."""
    best = min(int(np.sum((gaps >> b) + 1 + b)) for b in RICE_PARAMETERS)
    return best + 5


def random_positions_bits(numel, count):
    """log2 C(numel, count)."""
    return (math.lgamma(numel + 1) - math.lgamma(count + 1)
            - math.lgamma(numel - count + 1)) / math.log(2)


def gaps_of(indices):
    """gap-1 values of strictly ascending indices, the first index as is."""
    indices = np.sort(np.asarray(indices, dtype=np.int64))
    return np.diff(np.concatenate(([-1], indices))) - 1


def bucket_code_bits(gaps):
    """Bits of the power-of-two bucket code: entropy of the buckets plus
    the raw offset bits within each bucket."""
    buckets = np.zeros(len(gaps), dtype=np.int64)
    nonzero = gaps > 0
    buckets[nonzero] = np.floor(np.log2(gaps[nonzero])).astype(np.int64) + 1
    offset_bits = np.maximum(buckets - 1, 0).sum()
    _, counts = np.unique(buckets, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum()) * len(gaps) + float(offset_bits)


class Costs:
    """Index costs of one direction, per layer (and per sender, for the
    overlap with the sender's previous message)."""

    def __init__(self):
        self.layers = {}
        self.previous = {}

    def add(self, name, numel, indices, sender=0):
        if len(indices) == 0:
            return
        gaps = gaps_of(indices)
        layer = self.layers.setdefault(name, {"numel": numel, "entries": 0, "varint": 0,
                                              "rice_bits": 0.0, "random_bits": 0.0,
                                              "repeated": 0, "gaps": []})
        previous = self.previous.get((name, sender))
        if previous is not None:
            layer["repeated"] += len(np.intersect1d(previous, indices))
        self.previous[(name, sender)] = np.asarray(indices)
        layer["entries"] += len(gaps)
        layer["varint"] += varint_bytes(gaps)
        layer["rice_bits"] += rice_bits(gaps)
        layer["random_bits"] += random_positions_bits(numel, len(gaps))
        layer["gaps"].append(gaps)

    def table(self):
        """Bytes per entry under each code, per layer and for all layers."""
        rows = []
        total = {"entries": 0, "varint": 0.0, "rice": 0.0, "buckets": 0.0, "random": 0.0,
                 "repeated": 0}
        for name, layer in self.layers.items():
            gaps = np.concatenate(layer["gaps"])
            row = {"layer": name, "numel": layer["numel"], "entries": layer["entries"],
                   "varint": layer["varint"], "rice": layer["rice_bits"] / 8,
                   "buckets": bucket_code_bits(gaps) / 8, "random": layer["random_bits"] / 8,
                   "repeated": layer["repeated"]}
            rows.append(row)
            for key in total:
                total[key] += row[key]
        total["layer"] = "all"
        total["numel"] = sum(r["numel"] for r in rows)
        rows.append(total)
        return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--rho", type=float, default=0.00155)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--skip_steps", type=int, default=50,
                        help="steps before costs are counted (the first selections "
                             "follow the initial weights more than training)")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="out/index_code")
    args = parser.parse_args()
    if args.skip_steps >= args.steps:
        parser.error("--skip_steps must be below --steps")
    import entrograd  # the build's package (PYTHONPATH=build/python)

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    images, labels = data.load_split(args.data, "train")
    model = data.FashionCnn("cnn")
    named = list(model.named_parameters())
    compressors = [[entrograd.LayerCompressor(p.numel(), policy="topk", rho=args.rho,
                                              dense_below=0, momentum=0.9)
                    for _, p in named] for _ in range(args.ranks)]
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(args.seed))
    per_step = args.ranks * args.batch_size
    uplink, downlink = Costs(), Costs()
    for step in range(args.steps):
        merged = [torch.zeros(p.numel()) for _, p in named]
        largest_k = [0] * len(named)
        for rank in range(args.ranks):
            start = (step * per_step + rank * args.batch_size) % (len(labels) - per_step)
            batch = order[start:start + args.batch_size]
            model.zero_grad()
            F.cross_entropy(model(images[batch]), labels[batch]).backward()
            for layer, (name, parameter) in enumerate(named):
                sent = compressors[rank][layer].compress(
                    parameter.grad.detach().reshape(-1).contiguous(), step)
                merged[layer].index_add_(0, sent["indices"], sent["values"])
                largest_k[layer] = max(largest_k[layer], len(sent["indices"]))
                if step >= args.skip_steps:
                    uplink.add(name, parameter.numel(), sent["indices"].numpy(), rank)
        with torch.no_grad():
            for layer, (name, parameter) in enumerate(named):
                kept = torch.topk(merged[layer].abs(), largest_k[layer]).indices
                update = torch.zeros_like(merged[layer])
                update[kept] = merged[layer][kept]
                parameter.sub_(args.lr * update.reshape(parameter.shape))
                if step >= args.skip_steps:
                    downlink.add(name, parameter.numel(), kept.numpy())

    result = {"steps": args.steps, "counted_from_step": args.skip_steps, "ranks": args.ranks,
              "rho": args.rho, "uplink": uplink.table(), "downlink": downlink.table()}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "index_code.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(f"index bytes per entry, steps {args.skip_steps}-{args.steps - 1}, "
          f"{args.ranks} ranks, rho {args.rho} (uplink: per rank message)\n")
    print("| direction | layer | numel | entries | varint (today) | rice | "
          "buckets | random positions | sent the step before |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for direction, rows in (("up", result["uplink"]), ("down", result["downlink"])):
        for row in rows:
            e = row["entries"]
            print(f"| {direction} | {row['layer']} | {row['numel']} | {e} | "
                  f"{row['varint'] / e:.2f} | {row['rice'] / e:.2f} | "
                  f"{row['buckets'] / e:.2f} | {row['random'] / e:.2f} | "
                  f"{100 * row['repeated'] / e:.1f}% |")


if __name__ == "__main__":
    main()
