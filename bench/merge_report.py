"""Turns merge_bench's JSON into a Markdown table of merge throughput.

Usage: /usr/bin/python3 bench/merge_report.py results.json
  (results.json from: merge_bench --benchmark_out=results.json
   --benchmark_out_format=json)
Ratios are computed from the same run: speed-up = baseline time / ours.
Throughput counts input nonzeros (all ranks' pairs) per second.
With --benchmark_repetitions=N, each cell is the run with the median real
time (the machine is shared, so single runs are noisy).
"""
import json
import re
import sys


def main() -> None:
    with open(sys.argv[1]) as f:
        report = json.load(f)
    rows = {}
    for bench in report["benchmarks"]:
        match = re.match(r"BM_(\w+)/W:(\d+)/ppm:(\d+)", bench["name"])
        if not match or bench.get("run_type") == "aggregate":
            continue
        name, world, ppm = match.group(1), int(match.group(2)), int(match.group(3))
        rows.setdefault((world, ppm), {}).setdefault(name, []).append(bench)
    for by_name in rows.values():
        for name, runs in by_name.items():
            runs.sort(key=lambda run: run["real_time"])
            by_name[name] = runs[len(runs) // 2]
    print("| W | density per rank | input nonzeros | merged nonzeros "
          "| entrograd (ms) | entrograd (M nnz/s) | blocked (M nnz/s) "
          "| small-block (M nnz/s) | k-way heap (ms) | std::map (ms) "
          "| dense scatter (ms) | speed-up vs std::map | speed-up vs dense scatter |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (world, ppm), by_name in sorted(rows.items()):
        ours = by_name["EntrogradMerge"]
        ours_ms = ours["real_time"]
        kway_ms = by_name["EntrogradKWayMerge"]["real_time"]
        # The strategies forced, to show where ChooseMergeStrategy's pick wins.
        blocked = by_name["EntrogradBlockedMerge"]["items_per_second"] / 1e6
        small = by_name["EntrogradSmallBlockMerge"]["items_per_second"] / 1e6
        map_ms = by_name["StdMapMerge"]["real_time"]
        dense_ms = by_name["DenseScatterMerge"]["real_time"]
        print(f"| {world} | {ppm / 1e4:g}% | {int(ours['input_nonzeros']):,} "
              f"| {int(ours['merged_nonzeros']):,} | {ours_ms:.2f} "
              f"| {ours['items_per_second'] / 1e6:.0f} | {blocked:.0f} | {small:.0f} "
              f"| {kway_ms:.2f} | {map_ms:.1f} "
              f"| {dense_ms:.1f} | {map_ms / ours_ms:.1f}x | {dense_ms / ours_ms:.1f}x |")


if __name__ == "__main__":
    main()
