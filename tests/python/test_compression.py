"""Compression through the Python front end equals the C++ core bit for bit.

The same gradients go (1) through tests/python/compress_reference.cc, the
C++ LayerCompressor in a process of its own, (2) through
entrograd.LayerCompressor, and (3) through DistributedOptimizer's C++
autograd hooks in a one-rank job against a real aggregator. Each step's k,
indices and values, and the residual (and velocity) after it, must be the
same bits; in (3) the residual comes from state_dict() and the values from
the parameter's change (p <- p - lr * merged, merged = the values for one
rank).
"""

import struct
import subprocess

import numpy as np
import pytest
import torch

import entrograd
from conftest import binary_path

NUMEL = 6000
STEPS = 4
LR = 0.5

CASES = [
    # policy, rho, momentum_correction
    ("entropy", 0.01, True),
    ("entropy", 0.05, False),
    ("topk", 0.02, True),
    ("dense", 0.01, False),
]


def gradients(seed):
    """STEPS gradients of NUMEL elements with structure (a few large
    entries, a sparse region) so that entropy and selection matter."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(STEPS):
        g = torch.randn(NUMEL, generator=generator) * 1e-3
        g[:NUMEL // 4] *= 100
        g[NUMEL // 2:NUMEL // 2 + 500] = 0
        out.append(g.contiguous())
    return out


def bits(tensor):
    """The float32 bits as int32, so -0.0 != 0.0 and NaNs compare."""
    return tensor.contiguous().view(torch.int32)


def run_reference(tmp_path, grads, policy, rho, momentum_correction):
    """The C++ core's output: per step (k, dense, indices, values, residual,
    velocity)."""
    input_path = tmp_path / f"{policy}-grad.bin"
    output_path = tmp_path / f"{policy}-out.bin"
    input_path.write_bytes(b"".join(g.numpy().tobytes() for g in grads))
    subprocess.run(
        [binary_path("ENTROGRAD_COMPRESS_REFERENCE"), str(input_path), str(output_path),
         str(NUMEL), str(STEPS), policy, repr(rho), "1024",
         "1" if momentum_correction else "0", "0.9"],
        check=True, timeout=60)
    data = output_path.read_bytes()
    position = 0

    def take(fmt):
        nonlocal position
        values = struct.unpack_from(fmt, data, position)
        position += struct.calcsize(fmt)
        return values

    def take_array(dtype, count):
        nonlocal position
        array = np.frombuffer(data, dtype=dtype, count=count, offset=position)
        position += array.nbytes
        # torch has no uint32: indices become int64 (as the binding returns).
        return torch.from_numpy(array.astype(np.int64 if dtype == np.uint32 else dtype))

    steps = []
    for _ in range(STEPS):
        k, dense = take("<qq")
        (n,) = take("<q")
        indices = take_array(np.uint32, n)
        (m,) = take("<q")
        values = take_array(np.float32, m)
        residual = take_array(np.float32, NUMEL)
        (v,) = take("<q")
        velocity = take_array(np.float32, v)
        steps.append(dict(k=k, dense=bool(dense), indices=indices, values=values,
                          residual=residual, velocity=velocity))
    assert position == len(data)
    return steps


@pytest.mark.parametrize("policy,rho,momentum_correction", CASES)
def test_layer_compressor_matches_cpp_core(tmp_path, policy, rho, momentum_correction):
    grads = gradients(seed=11)
    reference = run_reference(tmp_path, grads, policy, rho, momentum_correction)
    compressor = entrograd.LayerCompressor(
        NUMEL, policy=policy, rho=rho, dense_below=1024,
        momentum_correction=momentum_correction, momentum=0.9)
    for step, (g, want) in enumerate(zip(grads, reference)):
        got = compressor.compress(g, step)
        assert got["k"] == want["k"], f"step {step}"
        assert got["dense"] == want["dense"]
        assert torch.equal(got["indices"], want["indices"])
        assert torch.equal(bits(got["values"]), bits(want["values"]))
        assert torch.equal(bits(compressor.residual), bits(want["residual"]))
        assert torch.equal(bits(compressor.velocity), bits(want["velocity"]))
    # Compression did something: not every step sent everything.
    if policy != "dense":
        assert all(0 < r["k"] < NUMEL for r in reference)


@pytest.mark.parametrize("policy,rho", [("entropy", 0.01), ("topk", 0.02)])
def test_optimizer_hooks_match_cpp_core(tmp_path, aggregator, policy, rho):
    """The optimizer's hooks compress as the core does, and step() applies
    exactly the values sent (one rank: merged == sent)."""
    grads = gradients(seed=12)
    reference = run_reference(tmp_path, grads, policy, rho, True)
    weight = torch.nn.Parameter(torch.randn(NUMEL, generator=torch.Generator().manual_seed(3)))
    client = entrograd.Client(shards=[aggregator.address], job_id=f"hooks-{policy}",
                              rank=0, world_size=1)
    optimizer = entrograd.DistributedOptimizer(
        [("weight", weight)], client, lr=LR, policy=policy, rho=rho,
        dense_below=1024, momentum_correction=True, momentum=0.9)
    lr32 = np.float32(LR)
    for step, (g, want) in enumerate(zip(grads, reference)):
        before = weight.detach().clone()
        # d/dw sum(w * g) = g exactly.
        (weight * g).sum().backward()
        stats = optimizer.step()
        assert stats.step == step
        state = optimizer.state_dict()
        assert state["step"] == step + 1
        assert torch.equal(bits(state["residual_0"]), bits(want["residual"]))
        assert torch.equal(bits(state["velocity_0"]), bits(want["velocity"]))
        # p[i] <- p[i] - lr * value at the sent indices, in float32; the
        # other entries unchanged.
        expected = before.numpy().copy()
        idx = want["indices"].numpy()
        expected[idx] = expected[idx] - lr32 * want["values"].numpy()
        assert np.array_equal(weight.detach().numpy().view(np.int32),
                              expected.view(np.int32)), f"step {step}"
        assert weight.grad is None  # step() consumed it
    # Every layer once per step, no resends on a healthy connection; the
    # sparse steps cost fewer bytes than dense float32.
    traffic = client.traffic()
    assert traffic["uplink_dense_bytes"] == 4 * NUMEL * STEPS
    assert 0 < traffic["uplink_wire_bytes"] < traffic["uplink_dense_bytes"]
    assert traffic["downlink_dense_bytes"] == 4 * NUMEL * STEPS
    client.close()
