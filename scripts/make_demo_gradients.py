"""Writes gradient-like float32 .npy layers for the demo.

Shapes are those of a small Fashion-MNIST CNN. Values are heavy-tailed
(Student-t, 2 degrees of freedom) with per-output-channel scales, so the
layers differ in entropy the way real gradients do. Deterministic (seed 0).
"""
import pathlib
import sys

import numpy as np

LAYERS = {
    "conv1.weight": (32, 1, 5, 5),
    "conv2.weight": (64, 32, 5, 5),
    "fc1.weight": (256, 3136),
    "fc2.weight": (10, 256),
}


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, shape in LAYERS.items():
        # A few channels carry most of the gradient: lower entropy.
        channel_scale = rng.lognormal(mean=0.0, sigma=1.5, size=shape[0])
        values = rng.standard_t(df=2.0, size=shape) * 1e-3
        values *= channel_scale.reshape((-1,) + (1,) * (len(shape) - 1))
        np.save(out / f"{name}.npy", values.astype("<f4"))
    print(f"demo: wrote {len(LAYERS)} layers to {out}")


if __name__ == "__main__":
    main()
