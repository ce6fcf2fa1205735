#!/usr/bin/python3
"""bench/epoch_curves.py on summaries written here: the per-epoch means,
sample standard deviations and paired differences it prints, the rows a run
that stopped early leaves out, and its refusal of runs that do not pair."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import epoch_curves  # noqa: E402

STEPS_PER_EPOCH = 100


def write_run(directory, seed, accuracies, uplink=1000, downlink=1000,
              dense=4_000_000):
    """A summary.json like entrograd-launch's, one eval per epoch."""
    os.makedirs(directory)
    evals = [{"step": STEPS_PER_EPOCH * (i + 1), "test_accuracy": a,
              "validation_accuracy": a + 0.01} for i, a in enumerate(accuracies)]
    summary = {"seed": seed, "evals": evals,
               "steps": STEPS_PER_EPOCH * len(accuracies),
               "epochs_completed": len(accuracies),
               "uplink_wire_bytes": uplink, "downlink_wire_bytes": downlink,
               "dense_equivalent_bytes": dense}
    with open(os.path.join(directory, "summary.json"), "w") as f:
        json.dump(summary, f)
    return directory


def run_main(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        epoch_curves.main(argv)
    return out.getvalue()


class EpochCurvesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def arm(self, name, per_seed):
        return ",".join(write_run(os.path.join(self.dir, f"{name}_s{seed}"), seed, acc)
                        for seed, acc in per_seed.items())

    def test_means_sds_and_paired_differences(self):
        a = self.arm("a", {1: [0.80, 0.90], 2: [0.82, 0.92], 3: [0.84, 0.94]})
        b = self.arm("b", {1: [0.70, 0.91], 2: [0.76, 0.90], 3: [0.79, 0.93]})
        text = run_main(["--a", a, "--b", b, "--a_label", "dense", "--b_label", "topk"])
        rows = [line for line in text.splitlines() if line.startswith("| 1 (") or
                line.startswith("| 2 (")]
        self.assertEqual(len(rows), 2, text)
        # Epoch 1: a = 80, 82, 84 (mean 82, sd 2); b = 70, 76, 79 (mean 75,
        # sd sqrt(21) = 4.58); b - a = -10, -6, -5 (mean -7, sd sqrt(7) = 2.65).
        self.assertEqual(rows[0], "| 1 (100) | 82.00 ± 2.00% | 75.00 ± 4.58% | "
                                  "-10.00, -6.00, -5.00 | -7.00 ± 2.65 |")
        # Epoch 2: b - a = +1, -2, -1 (mean -0.67, sd 1.53).
        self.assertIn("| +1.00, -2.00, -1.00 | -0.67 ± 1.53 |", rows[1])
        self.assertIn("topk, seed 2: 0.0 MB up plus down, 2,000x less than dense "
                      "float32 (uplink alone 2,000x)", text)

    def test_last_epochs_averages_each_seed_then_pairs(self):
        a = self.arm("a", {1: [0.10, 0.80, 0.90, 0.70], 2: [0.10, 0.82, 0.92, 0.72]})
        b = self.arm("b", {1: [0.50, 0.70, 0.91, 0.66], 2: [0.50, 0.76, 0.90, 0.68]})
        text = run_main(["--a", a, "--b", b, "--last_epochs", "3"])
        # Epochs 2-4 (epoch 1 left out): a = 80, 82 per seed; b = 75.67,
        # 78 per seed; b - a = -4.33, -4.00 (mean -4.17, sd 0.24).
        self.assertIn("test accuracy averaged over epochs 2-4, per seed:", text)
        self.assertIn("| 81.00 ± 1.41% | 76.83 ± 1.65% | -4.33, -4.00 | -4.17 ± 0.24 |",
                      text)
        # A gain is signed, in the mean as in each seed.
        text = run_main(["--a", b, "--b", a, "--last_epochs", "3"])
        self.assertIn("| +4.33, +4.00 | +4.17 ± 0.24 |", text)
        # More epochs than the runs reached: said, not averaged over fewer.
        text = run_main(["--a", a, "--b", b, "--last_epochs", "5"])
        self.assertIn("seed 1 has 4 epochs both arms reached, fewer than 5", text)
        self.assertNotIn("averaged over", text)

    def test_validation_metric(self):
        a = self.arm("a", {1: [0.50]})
        b = self.arm("b", {1: [0.60]})
        text = run_main(["--a", a, "--b", b, "--metric", "validation_accuracy"])
        self.assertIn("| 1 (100) | 51.00% (1 seed) | 61.00% (1 seed) | +10.00 | "
                      "+10.00 (1 seed) |", text)

    def test_a_run_that_stopped_early_pairs_only_where_it_reached(self):
        a = self.arm("a", {1: [0.80], 2: [0.82]})  # stopped after epoch 1
        b = self.arm("b", {1: [0.70, 0.75], 2: [0.72, 0.78]})
        text = run_main(["--a", a, "--b", b])
        self.assertIn("| 1 (100) | 81.00 ± 1.41% | 71.00 ± 1.41% | -10.00, -10.00 |", text)
        # Epoch 2: no A run has it, so no row.
        self.assertNotIn("| 2 (200)", text)

    def test_refuses_runs_that_do_not_pair(self):
        a = self.arm("a", {1: [0.8], 2: [0.8]})
        b = self.arm("b", {1: [0.8], 3: [0.8]})
        result = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "epoch_curves.py"),
                                 "--a", a, "--b", b], capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("has seed 2 but its pair", result.stderr)
        result = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "epoch_curves.py"),
                                 "--a", a, "--b", b.split(",")[0]],
                                capture_output=True, text=True)
        self.assertIn("2 --a runs but 1 --b runs", result.stderr)

    def test_names_a_missing_summary(self):
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        result = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "epoch_curves.py"),
                                 "--a", empty, "--b", empty], capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(os.path.join(empty, "summary.json"), result.stderr)


if __name__ == "__main__":
    unittest.main()
