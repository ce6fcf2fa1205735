"""Compression options from keyword arguments.

Arguments left as None keep the C++ defaults (CompressionOptions in
entrograd/compression_options.h), so the two cannot drift.
"""

from . import _C


def compression_options(policy=None, rho=None, min_keep_ratio=None,
                        budget_density=None, threshold=None, intervals=None,
                        dense_below=None, warmup_steps=None,
                        momentum_correction=None, momentum=None,
                        entropy_of=None, share_hold_steps=None):
    """A validated _C.CompressionOptions.

    policy: "entropy" (default), "entropy_budget", "topk", "threshold" or
    "dense". rho: density of a maximal-entropy layer (topk: fixed density).
    budget_density: the global density of entropy_budget. threshold: |A|
    cut of the threshold policy. intervals: entropy intervals M.
    dense_below: layers with fewer elements are sent whole. warmup_steps:
    DGC warm-up. momentum_correction / momentum: local momentum before
    compression (ALGORITHM.md 5.1). entropy_of: what the entropy policies
    measure, "gradient" (default) or "accumulated" (residual plus gradient).
    share_hold_steps: the entropy policy takes each layer's share at the
    first step of every window of this many steps and holds it (1: every
    step; other policies take only 1).

    Raises InvalidArgumentError naming the first value out of range, and
    TypeError for a value of the wrong type.
    """
    options = _C.CompressionOptions()
    given = {
        "policy": policy, "rho": rho, "min_keep_ratio": min_keep_ratio,
        "budget_density": budget_density, "threshold": threshold,
        "intervals": intervals, "dense_below": dense_below,
        "warmup_steps": warmup_steps,
        "momentum_correction": momentum_correction, "momentum": momentum,
        "entropy_of": entropy_of, "share_hold_steps": share_hold_steps,
    }
    for name, value in given.items():
        if value is not None:
            setattr(options, name, value)
    options.validate()
    return options
