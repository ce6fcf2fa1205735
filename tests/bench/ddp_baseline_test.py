#!/usr/bin/python3
"""bench/ddp_fashion_mnist.py stands in for entrograd's `dense` policy where
that is too slow to run (the wide model: BENCHMARKS "The quality protocol on
the wide model"). That holds only while both train the same model on the
same data in the same order with the same validation split: this test runs
both for a few steps and requires the same test loss to 1% and the same
accuracies to 1 pp. A different data order or split moves the test loss by
several percent; float reduction order (gloo's allreduce against the
aggregator's merge) moves it by about 0.1%.

Also: --validation out of range is refused, naming the flag.

Exit 77 (skipped) without Fashion-MNIST or PyTorch.

Usage: ddp_baseline_test.py LAUNCHER OUT_DIR
"""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DDP = os.path.join(REPO, "bench", "ddp_fashion_mnist.py")
DATA = "/usr/share/datasets/fashion-mnist"

# Small enough for CI, long enough that the loss has moved far from its
# start: the same settings on both sides.
SETTINGS = {"workers": 2, "batch_size": 32, "lr": 0.03, "momentum": 0.9, "seed": 3,
            "max_steps": 30, "validation": 1000, "eval_samples": 1000}


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(77)


def fail(message):
    print(f"FAILED: {message}")
    sys.exit(1)


def run(cmd, timeout=300):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def main():
    launcher, out = sys.argv[1], sys.argv[2]
    if not os.path.isdir(DATA):
        skip(f"Fashion-MNIST is not installed ({DATA} is missing)")
    rc, _ = run(["/usr/bin/python3", "-c", "import torch"])
    if rc != 0:
        skip("PyTorch (python3-torch) is not installed")
    os.makedirs(out, exist_ok=True)
    s = SETTINGS

    ddp_json = os.path.join(out, "ddp.json")
    rc, log = run(["/usr/bin/python3", DDP, "--model=cnn", "--log_every=0",
                   f"--json_out={ddp_json}"] + [f"--{k}={v}" for k, v in s.items()])
    if rc != 0:
        fail(f"the DDP baseline exited {rc}:\n{log[-3000:]}")
    ddp = json.load(open(ddp_json))

    eg_out = os.path.join(out, "entrograd_dense")
    rc, log = run([launcher, "--model=cnn", "--policy=dense", "--epochs=1",
                   "--eval_every=0", "--eval_each_epoch=false", "--timeout=240s",
                   f"--out={eg_out}"] + [f"--{k}={v}" for k, v in s.items()])
    if rc != 0:
        fail(f"entrograd-launch --policy=dense exited {rc}:\n{log[-3000:]}")
    eg = json.load(open(os.path.join(eg_out, "summary.json")))

    print(f"DDP:              test loss {ddp['test_loss']:.5f} accuracy {ddp['test_accuracy']:.4f} "
          f"validation {ddp['validation_accuracy']:.4f} steps {ddp['steps']}")
    print(f"entrograd dense:  test loss {eg['test_loss']:.5f} accuracy {eg['test_accuracy']:.4f} "
          f"validation {eg['validation_accuracy']:.4f} steps {eg['steps']}")
    if ddp["steps"] != eg["steps"] or ddp["steps"] != s["max_steps"]:
        fail(f"steps differ: DDP {ddp['steps']}, entrograd {eg['steps']}, "
             f"asked {s['max_steps']}")
    if ddp["validation"] != s["validation"]:
        fail(f"DDP's summary says validation {ddp['validation']}, asked {s['validation']}")
    relative = abs(ddp["test_loss"] - eg["test_loss"]) / eg["test_loss"]
    if relative > 0.01:
        fail(f"test loss differs by {100 * relative:.2f}% (over 1%): "
             "the two no longer train the same thing")
    for key in ("test_accuracy", "validation_accuracy"):
        if abs(ddp[key] - eg[key]) > 0.01:
            fail(f"{key} differs by {100 * abs(ddp[key] - eg[key]):.2f} pp (over 1 pp)")

    rc, log = run(["/usr/bin/python3", DDP, "--workers=1", "--max_steps=1",
                   "--validation=60000", "--log_every=0"])
    if rc == 0 or "--validation 60000" not in log:
        fail(f"--validation 60000 (all training images) was not refused by name "
             f"(exit {rc}):\n{log[-2000:]}")
    print("PASSED")


if __name__ == "__main__":
    main()
