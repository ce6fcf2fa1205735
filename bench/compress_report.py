"""Turns compress_bench's JSON into the Markdown table of docs/BENCHMARKS.md.

Usage: /usr/bin/python3 bench/compress_report.py results.json
Ratios are computed from the same run: speed-up = baseline time / ours;
bandwidth = (our bytes moved / our time) / (memcpy bytes / memcpy time).
"""
import json
import re
import sys


def main() -> None:
    with open(sys.argv[1]) as f:
        report = json.load(f)
    rows = {}
    for bench in report["benchmarks"]:
        match = re.match(r"BM_(\w+)/numel:(\d+)/ppm:(\d+)", bench["name"])
        if not match or bench.get("run_type") == "aggregate":
            continue
        name, numel, ppm = match.group(1), int(match.group(2)), int(match.group(3))
        rows.setdefault((numel, ppm), {})[name] = bench
    print("| numel | density | k | entrograd entropy (ms) | entrograd topk (ms) "
          "| torch::topk(abs) (ms) | nth_element (ms) | memcpy (ms) "
          "| speed-up vs torch | speed-up vs nth_element | share of memcpy bandwidth |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (numel, ppm), by_name in sorted(rows.items()):
        ours = by_name["EntrogradCompressTopK"]
        entropy = by_name["EntrogradCompressEntropy"]
        torch_ms = by_name["TorchTopKAbs"]["real_time"]
        nth_ms = by_name["StdNthElement"]["real_time"]
        memcpy = by_name["Memcpy"]
        ours_ms = ours["real_time"]
        bandwidth = (ours["bytes_moved"] / ours_ms) / (memcpy["bytes_moved"] / memcpy["real_time"])
        print(f"| {numel:,} | {ppm / 1e4:g}% | {int(ours['k']):,} | {entropy['real_time']:.1f} "
              f"| {ours_ms:.1f} | {torch_ms:.1f} | {nth_ms:.1f} | {memcpy['real_time']:.1f} "
              f"| {torch_ms / ours_ms:.1f}x | {nth_ms / ours_ms:.1f}x | {100 * bandwidth:.0f}% |")


if __name__ == "__main__":
    main()
