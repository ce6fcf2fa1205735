#!/usr/bin/env python3
"""Merges gpu_compress_bench's and torch_topk_bench.py's JSON lines into the
Markdown table of docs/BENCHMARKS.md ("GPU compression").

    python3 bench/gpu/gpu_report.py compress.jsonl torch_topk.jsonl [--out FILE]

Ratios come from the same machine and run: speed-up = torch.topk(x.abs(), k)
time / compress time; copy fraction = device copy time / compress time;
bandwidth share = (the fewest bytes the compress must move / its time) /
(8 n bytes / device copy time). Rows of one file without a match in the other
show "n/a" in the other's columns.
"""
import argparse
import json
import sys


def read_lines(path: str) -> list:
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rows.append(json.loads(line))
    except FileNotFoundError:
        print(f"gpu_report: {path} not found; its columns stay empty", file=sys.stderr)
    return rows


def fmt(value, pattern: str) -> str:
    return "n/a" if value is None else pattern.format(value)


def report(compress: list, torch_rows: list) -> str:
    torch_by_case = {(r["n"], r["density"]): r for r in torch_rows}
    gpus = sorted({r["gpu"] for r in compress + torch_rows})
    versions = sorted({r["torch"] for r in torch_rows})
    lines = [
        f"GPU: {', '.join(gpus) or 'unknown'}; PyTorch {', '.join(versions) or 'n/a'}.",
        "",
        "| numel | density | k | momentum | entrograd compress (ms) | device copy (ms) "
        "| copy / compress | share of copy bandwidth | torch.topk(abs) (ms) "
        "| topk unsorted (ms) | speed-up vs torch.topk |",
        "|---:|---:|---:|:---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    seen = set()
    for r in sorted(compress, key=lambda r: (r["n"], r["density"], r["momentum"])):
        t = torch_by_case.get((r["n"], r["density"]))
        seen.add((r["n"], r["density"]))
        topk = t["topk_ms"] if t else None
        speedup = topk / r["compress_ms"] if topk else None
        lines.append(
            f"| {r['n']:,} | {100 * r['density']:g}% | {r['k']:,} "
            f"| {'on' if r['momentum'] else 'off'} | {r['compress_ms']:.3f} "
            f"| {r['copy_ms']:.3f} | {100 * r['copy_fraction']:.0f}% "
            f"| {100 * r['bandwidth_share']:.0f}% | {fmt(topk, '{:.3f}')} "
            f"| {fmt(t['topk_unsorted_ms'] if t else None, '{:.3f}')} "
            f"| {fmt(speedup, '{:.1f}x')} |")
    for (n, density), t in sorted(torch_by_case.items()):
        if (n, density) not in seen:
            lines.append(
                f"| {n:,} | {100 * density:g}% | {t['k']:,} | n/a | n/a | n/a | n/a "
                f"| n/a | {t['topk_ms']:.3f} | {t['topk_unsorted_ms']:.3f} | n/a |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compress_jsonl")
    parser.add_argument("torch_jsonl")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    table = report(read_lines(args.compress_jsonl), read_lines(args.torch_jsonl))
    sys.stdout.write(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
