"""entrograd.comm_hook under DistributedDataParallel: two processes (a gloo
process group for DDP itself) against a real aggregator. Under the dense
policy the hook must give DDP's own allreduce average bit for bit at every
step; under the entropy policy the replicas must stay bitwise equal while
sending a fraction of the dense bytes."""

import json
import os
import socket
import subprocess
import sys

import pytest

STEPS = 5
WORLD = 2
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_ranks(aggregator, policy):
    init_method = f"tcp://127.0.0.1:{free_port()}"
    ranks = [subprocess.Popen(
        [sys.executable, os.path.join(HERE, "comm_hook_rank.py"),
         f"--shard={aggregator.address}", f"--init_method={init_method}",
         f"--rank={rank}", f"--world_size={WORLD}", f"--job_id=ddp-{policy}",
         f"--policy={policy}", f"--steps={STEPS}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for rank in range(WORLD)]
    results = []
    for rank, process in enumerate(ranks):
        try:
            out, err = process.communicate(timeout=240)
        finally:
            for other in ranks:
                if other.poll() is None and process.returncode is None:
                    other.kill()
        assert process.returncode == 0, f"rank {rank} exited {process.returncode}:\n{err[-3000:]}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.mark.parametrize("policy", ["dense", "entropy"])
def test_comm_hook_under_ddp(aggregator, policy):
    results = run_ranks(aggregator, policy)
    for result in results:
        assert result["steps"] == STEPS
        assert len(result["hashes"]["hooked"]) == STEPS
    # Replicas equal at every step, with and without the hook.
    assert results[0]["hashes"] == results[1]["hashes"]
    hooked = results[0]["hashes"]["hooked"]
    reference = results[0]["hashes"]["reference"]
    traffic = results[0]["traffic"]
    if policy == "dense":
        assert hooked == reference
        # Every element sent; the codec may still drop exact zeros.
        assert traffic["uplink_dense_bytes"] == 4 * 454922 * STEPS
    else:
        assert hooked[0] != reference[0]  # compression changed the update
        assert traffic["uplink_wire_bytes"] * 10 < traffic["uplink_dense_bytes"]
    assert len(set(hooked)) == STEPS  # the weights moved every step
    # The hook reported into the client's /metrics endpoint: the bytes the
    # client counted, one compression per parameter per step, and each
    # parameter's entropy.
    metrics = results[0]["metrics"]
    assert metrics["uplink_wire_bytes"] == traffic["uplink_wire_bytes"]
    assert metrics["compress_count"] == len(results[0]["parameters"]) * STEPS
    assert metrics["entropy_layers"] == results[0]["parameters"]
    print(f"{policy}: rank 0 sent {traffic['uplink_wire_bytes']} bytes for "
          f"{traffic['uplink_dense_bytes']} dense float32 bytes")
