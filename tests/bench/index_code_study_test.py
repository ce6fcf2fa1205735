#!/usr/bin/python3
"""bench/index_code_study.py: its index costs on indices worked out by hand
(delta varint, Golomb-Rice, power-of-two buckets, random positions, the
repeats of a sender's last message), and a short run of the study itself,
whose every message must hold exactly the k entries of top-k (uplink: each
rank's k; downlink: global top-k keeps the same k). The run is skipped
without the built entrograd package or Fashion-MNIST."""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import index_code_study as study  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


class CostsTest(unittest.TestCase):
    def test_gaps_count_from_minus_one_in_ascending_order(self):
        self.assertEqual(study.gaps_of([5, 0, 9]).tolist(), [0, 4, 3])

    def test_varint_bytes_at_each_length_boundary(self):
        gaps = np.array([0, 127, 128, 16383, 16384, (1 << 21) - 1, 1 << 21])
        self.assertEqual(study.varint_bytes(gaps), 1 + 1 + 2 + 2 + 3 + 3 + 4)

    def test_rice_takes_the_best_parameter(self):
        # All zeros: parameter 0, one bit each, plus 5 naming it.
        self.assertEqual(study.rice_bits(np.zeros(10, dtype=np.int64)), 10 + 5)
        # All 8..15: parameter 3 costs 1 + 1 + 3 = 5 bits each (0: 9-16 each).
        self.assertEqual(study.rice_bits(np.arange(8, 16)), 8 * 5 + 5)

    def test_buckets_are_entropy_plus_offset_bits(self):
        # Buckets 0, 1, 2, 2: entropy 1.5 bits each, bucket 2 adds 1 raw bit.
        self.assertAlmostEqual(study.bucket_code_bits(np.array([0, 1, 2, 3])),
                               4 * 1.5 + 2)

    def test_random_positions_is_log2_of_the_binomial(self):
        self.assertAlmostEqual(study.random_positions_bits(4, 2), math.log2(6))
        self.assertAlmostEqual(study.random_positions_bits(1000, 1000), 0.0, places=6)

    def test_repeats_are_counted_per_sender(self):
        costs = study.Costs()
        costs.add("w", 100, np.array([1, 5, 9]), sender=0)
        costs.add("w", 100, np.array([5, 9, 20]), sender=1)  # sender 1's first
        costs.add("w", 100, np.array([5, 7, 9]), sender=0)   # 5 and 9 again
        row = costs.table()[0]
        self.assertEqual((row["entries"], row["repeated"]), (9, 2))
        self.assertEqual(row["varint"], 9)


@unittest.skipUnless(os.path.isdir(DATA), f"no Fashion-MNIST at {DATA}")
class StudyRunTest(unittest.TestCase):
    def test_every_message_holds_k_entries(self):
        try:
            import entrograd  # noqa: F401
        except ImportError as error:
            self.skipTest(f"the built entrograd package is not importable: {error}")
        steps, counted, ranks, rho = 4, 2, 2, 0.01
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "index_code_study.py"),
                            "--steps", str(steps), "--skip_steps", str(steps - counted),
                            "--ranks", str(ranks), "--rho", str(rho), "--out", out],
                           check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out, "index_code.json")) as f:
                result = json.load(f)
        for direction, senders in (("uplink", ranks), ("downlink", 1)):
            rows = result[direction][:-1]
            self.assertEqual(len(rows), 8, direction)  # the cnn's tensors
            for row in rows:
                k = max(1, math.floor(rho * row["numel"] + 0.5))
                self.assertEqual(row["entries"], counted * senders * k, (direction, row))
                self.assertGreaterEqual(row["varint"], row["entries"], row)
                self.assertLessEqual(row["repeated"], row["entries"], row)


if __name__ == "__main__":
    unittest.main()
