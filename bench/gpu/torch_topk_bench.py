#!/usr/bin/env python3
"""The PyTorch baseline of gpu_compress_bench: torch.topk(x.abs(), k) on the GPU.

For the same sizes and densities (k = round(density * n)) and the same kind of
data (heavy-tailed, Student-t with 2 degrees of freedom, scale 1e-3), times
what a user would write to pick a layer's largest entries: torch.topk(x.abs(),
k), sorted (the default) and unsorted, and a device-to-device copy of x as a
cross-check of the C++ benchmark's copy. CUDA events, warm-up, median of
--repeats; small layers rotate over several tensors so that reads come from
HBM, as in the C++ benchmark. One JSON line per case; gpu_report.py makes the
table.

    python3 bench/gpu/torch_topk_bench.py [--sizes 1M,25M,100M,400M]
        [--densities 0.001,0.01] [--repeats 20] [--warmup 3] [--json-out FILE]
"""
import argparse
import json
import math
import statistics
import sys

import torch


def parse_size(text: str) -> int:
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:].upper(), 1)
    number = text[:-1] if scale != 1 else text
    return int(round(float(number) * scale))


def heavy_tailed(n: int, device: torch.device) -> torch.Tensor:
    # Inverse CDF of Student-t(2), as bench/gradient_data.h; u kept off 0 and 1.
    u = torch.rand(n, device=device).clamp_(1e-7, 1 - 1e-7)
    return ((2 * u - 1) / torch.sqrt(2 * u * (1 - u))) * 1e-3


def time_ms(fn, start: torch.cuda.Event, stop: torch.cuda.Event) -> float:
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1M,25M,100M,400M")
    parser.add_argument("--densities", default="0.001,0.01")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_topk_bench: torch sees no CUDA device", file=sys.stderr)
        return 1
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(device)
    l2_bytes = getattr(props, "L2_cache_size", 64 << 20)
    print(f"GPU: {props.name}, torch {torch.__version__}", flush=True)
    out = open(args.json_out, "w") if args.json_out else None
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.manual_seed(0)
    for n in (parse_size(s) for s in args.sizes.split(",") if s):
        # x and |x| per set: enough sets that the data is 4x the L2.
        sets = max(1, min(16, math.ceil(4 * l2_bytes / (8 * n))))
        xs = [heavy_tailed(n, device) for _ in range(sets)]
        target = torch.empty_like(xs[0])
        for density in (float(d) for d in args.densities.split(",") if d):
            k = min(n, max(1, math.floor(density * n + 0.5)))
            topk, unsorted, copy = [], [], []
            for r in range(args.warmup + args.repeats):
                x = xs[r % sets]
                t = time_ms(lambda: torch.topk(x.abs(), k), start, stop)
                u = time_ms(lambda: torch.topk(x.abs(), k, sorted=False), start, stop)
                c = time_ms(lambda: target.copy_(x), start, stop)
                if r >= args.warmup:
                    topk.append(t)
                    unsorted.append(u)
                    copy.append(c)
            line = json.dumps({
                "bench": "torch_topk", "gpu": props.name, "torch": torch.__version__,
                "n": n, "density": density, "k": k, "repeats": args.repeats,
                "layer_sets": sets,
                "topk_ms": round(statistics.median(topk), 4),
                "topk_unsorted_ms": round(statistics.median(unsorted), 4),
                "copy_ms": round(statistics.median(copy), 4),
            })
            print(line, flush=True)
            if out:
                out.write(line + "\n")
                out.flush()
        del xs, target
        torch.cuda.empty_cache()
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
