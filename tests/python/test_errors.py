"""Bad input gives clear Python exceptions, never a hang or a crash:
arguments of the wrong type or value, an unreachable aggregator (UNAVAILABLE
within the join timeout), a shard lost mid-training (an error within the
give-up time, then FAILED_PRECONDITION), tensors of the wrong dtype, device
or layout, and state that does not fit."""

import signal
import socket
import time

import pytest
import torch

import entrograd
from conftest import Aggregator, binary_path


def free_port():
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def linear(out_features=4, in_features=300):
    torch.manual_seed(0)
    return torch.nn.Linear(in_features, out_features)


def client_for(aggregator, job_id, **kwargs):
    return entrograd.Client(shards=[aggregator.address], job_id=job_id, rank=0,
                            world_size=1, **kwargs)


# --- arguments -------------------------------------------------------------

@pytest.mark.parametrize("kwargs,message", [
    (dict(shards="127.0.0.1:1"), "shards must be a list"),
    (dict(shards=[1]), "each shard must be"),
    (dict(rank=-1), "non-negative"),
    (dict(rank="0"), "rank must be an int"),
    (dict(rank=True), "rank must be an int"),
    (dict(token=5), "token must be"),
    (dict(tls="ca.pem"), "tls must be entrograd.TLS"),
    (dict(gap_range_indices=1), "gap_range_indices must be a bool"),
])
def test_client_argument_types(kwargs, message):
    arguments = dict(shards=["127.0.0.1:1"], job_id="j", rank=0, world_size=1)
    arguments.update(kwargs)
    with pytest.raises(TypeError, match=message):
        entrograd.Client(**arguments)


def test_tls_file_missing(tmp_path):
    with pytest.raises(entrograd.InvalidArgumentError, match="tls.ca_file") as info:
        entrograd.Client(shards=["127.0.0.1:1"], job_id="j", rank=0, world_size=1,
                         tls=entrograd.TLS(ca_file=str(tmp_path / "none.pem")))
    assert info.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("kwargs,field", [
    (dict(rank=2, world_size=2), "rank"),
    (dict(job_id="bad job id!"), "job"),
    (dict(shards=[]), "shards"),
])
def test_client_values_checked_on_connect(aggregator, kwargs, field):
    arguments = dict(shards=[aggregator.address], job_id="values", rank=0, world_size=1)
    arguments.update(kwargs)
    client = entrograd.Client(**arguments)
    with pytest.raises(entrograd.InvalidArgumentError, match=field) as info:
        entrograd.DistributedOptimizer(linear().named_parameters(), client, lr=0.1)
    assert info.value.code == "INVALID_ARGUMENT"
    assert isinstance(info.value, ValueError) and isinstance(info.value, entrograd.Error)


@pytest.mark.parametrize("kwargs,match", [
    (dict(policy="fastest"), "fastest"),
    (dict(entropy_of="weights"), "entropy source"),
    (dict(share_hold_steps=0), "share_hold_steps"),
    (dict(policy="topk", share_hold_steps=5), "share_hold_steps"),
    (dict(rho=2.0), "rho"),
    (dict(intervals=0), "intervals"),
    (dict(lr=0.0), "learning_rate"),
    (dict(merged_keep_factor=0.5), "merged_keep_factor"),
    (dict(momentum_correction=False), "optimizer="),
])
def test_optimizer_option_values(aggregator, kwargs, match):
    arguments = dict(lr=0.1)
    arguments.update(kwargs)
    client = client_for(aggregator, "options")
    with pytest.raises(entrograd.InvalidArgumentError, match=match):
        entrograd.DistributedOptimizer(linear().named_parameters(), client, **arguments)


def test_optimizer_argument_types(aggregator):
    client = client_for(aggregator, "types")
    with pytest.raises(TypeError, match="client must be"):
        entrograd.DistributedOptimizer(linear().named_parameters(), "client", lr=0.1)
    with pytest.raises(TypeError, match="pairs"):
        entrograd.DistributedOptimizer(linear().parameters(), client, lr=0.1)
    with pytest.raises(TypeError):
        entrograd.DistributedOptimizer(linear().named_parameters(), client, lr=0.1,
                                       rho="dense")
    assert not client.connected


# --- tensors -----------------------------------------------------------------

def test_parameter_dtype_refused(aggregator):
    model = linear().double()
    client = client_for(aggregator, "dtype")
    with pytest.raises(entrograd.InvalidArgumentError, match="weight.*Double.*float32"):
        entrograd.DistributedOptimizer(model.named_parameters(), client, lr=0.1)
    assert not client.connected


def test_parameter_device_refused(aggregator):
    weight = torch.nn.Parameter(torch.empty(10, device="meta"))
    client = client_for(aggregator, "device")
    with pytest.raises(entrograd.InvalidArgumentError, match="meta"):
        entrograd.DistributedOptimizer([("weight", weight)], client, lr=0.1)


def test_frozen_parameter_refused(aggregator):
    model = linear()
    model.bias.requires_grad_(False)
    client = client_for(aggregator, "frozen")
    with pytest.raises(entrograd.InvalidArgumentError, match="bias.*does not require"):
        entrograd.DistributedOptimizer(model.named_parameters(), client, lr=0.1)


def test_compressor_tensor_checks():
    compressor = entrograd.LayerCompressor(100)
    with pytest.raises(entrograd.InvalidArgumentError, match="Double"):
        compressor.compress(torch.zeros(100, dtype=torch.float64), 0)
    with pytest.raises(entrograd.InvalidArgumentError, match="contiguous"):
        compressor.compress(torch.zeros(100, 2)[:, 0], 0)
    with pytest.raises(entrograd.InvalidArgumentError, match="meta"):
        compressor.compress(torch.zeros(100, device="meta"), 0)
    with pytest.raises(entrograd.InvalidArgumentError):
        compressor.compress(torch.zeros(99), 0)
    nan = torch.zeros(100)
    nan[7] = float("nan")
    with pytest.raises(entrograd.InvalidArgumentError):
        compressor.compress(nan, 0)
    with pytest.raises(entrograd.InvalidArgumentError):
        entrograd.LayerCompressor(0)


# --- the network -------------------------------------------------------------

def test_unreachable_aggregator_fails_within_timeout():
    client = entrograd.Client(shards=[f"127.0.0.1:{free_port()}"], job_id="unreachable",
                              rank=0, world_size=1, join_timeout=2.0)
    start = time.monotonic()
    with pytest.raises(entrograd.UnavailableError) as info:
        entrograd.DistributedOptimizer(linear().named_parameters(), client, lr=0.1)
    elapsed = time.monotonic() - start
    assert info.value.code == "UNAVAILABLE"
    assert isinstance(info.value, ConnectionError)
    assert "connecting to the aggregator" in info.value.message
    assert elapsed < 10.0, f"took {elapsed:.1f} s for a 2 s join timeout"


def test_aggregator_lost_mid_training_fails_then_refuses():
    server = Aggregator(binary_path("ENTROGRAD_AGGREGATOR"))
    try:
        model = linear()
        client = entrograd.Client(shards=[server.address], job_id="lost", rank=0,
                                  world_size=1, merge_timeout=5.0,
                                  reconnect_give_up_after=3.0)
        optimizer = entrograd.DistributedOptimizer(model.named_parameters(), client, lr=0.1)
        x = torch.randn(8, 300)
        model(x).sum().backward()
        optimizer.step()
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        model(x).sum().backward()
        start = time.monotonic()
        with pytest.raises(entrograd.Error) as info:
            optimizer.step()
        elapsed = time.monotonic() - start
        assert info.value.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"), info.value
        assert elapsed < 30.0
        with pytest.raises(entrograd.FailedPreconditionError, match="earlier Step"):
            optimizer.step()
        client.close()
    finally:
        server.stop()


# --- state -------------------------------------------------------------------

def test_state_that_does_not_fit(tmp_path, aggregator):
    model = linear()
    client = client_for(aggregator, "state")
    optimizer = entrograd.DistributedOptimizer(model.named_parameters(), client, lr=0.1,
                                               dense_below=100)
    good = optimizer.state_dict()
    assert good["step"] == 0 and good["layers"] == 2

    wrong_step = dict(good, step=3)
    with pytest.raises(entrograd.FailedPreconditionError, match="state="):
        optimizer.load_state_dict(wrong_step)

    wrong_size = dict(good, residual_0=torch.zeros(5))
    with pytest.raises(entrograd.InvalidArgumentError, match="residual"):
        optimizer.load_state_dict(wrong_size)

    not_tensor = dict(good, residual_0="zeros")
    with pytest.raises(entrograd.InvalidArgumentError, match="must be a tensor"):
        optimizer.load_state_dict(not_tensor)

    nonfinite = dict(good, residual_0=torch.full_like(good["residual_0"], float("inf")))
    with pytest.raises(entrograd.InvalidArgumentError):
        optimizer.load_state_dict(nonfinite)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not an archive")
    with pytest.raises(entrograd.InvalidArgumentError, match="does not load"):
        optimizer.load_state(garbage)
    with pytest.raises(entrograd.InvalidArgumentError, match="does not load"):
        optimizer.load_state(tmp_path / "missing.pt")
    # Nothing changed on the refusals.
    after = optimizer.state_dict()
    for key, value in good.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(after[key], value), key
    client.close()


def test_comm_hook_state_arguments(aggregator):
    with pytest.raises(TypeError, match="client must be"):
        entrograd.CommHookState("client", linear().named_parameters())
    client = client_for(aggregator, "hook-args")
    with pytest.raises(entrograd.InvalidArgumentError, match="momentum_correction"):
        entrograd.CommHookState(client, linear().named_parameters(),
                                momentum_correction=True)
    with pytest.raises(entrograd.InvalidArgumentError, match="rho"):
        entrograd.CommHookState(client, linear().named_parameters(), rho=0.0)
    assert not client.connected


def test_client_is_used_once(aggregator):
    client = client_for(aggregator, "once")
    entrograd.DistributedOptimizer(linear().named_parameters(), client, lr=0.1)
    with pytest.raises(entrograd.FailedPreconditionError, match="already connected"):
        entrograd.DistributedOptimizer(linear().named_parameters(), client, lr=0.1)
    client.close()
