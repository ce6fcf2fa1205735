"""The client's Prometheus endpoint from Python (Client(metrics_listen=...)):
DistributedOptimizer reports into it what entrograd-worker's
--metrics_listen reports, and a bad address is a clear error."""

import socket

import pytest
import torch

import entrograd
from fashion_cnn import FashionCnn, batch
from prometheus_text import scrape, series, value

STEPS = 3


def test_optimizer_steps_show_on_the_endpoint(aggregator):
    client = entrograd.Client(shards=[aggregator.address], job_id="py-metrics", rank=0,
                              world_size=1, metrics_listen="127.0.0.1:0",
                              per_layer_metrics=True)
    assert client.metrics_port is not None and client.metrics_port > 0
    torch.manual_seed(0)
    model = FashionCnn()
    layers = len(list(model.parameters()))
    optimizer = entrograd.DistributedOptimizer(model.named_parameters(), client, lr=0.1)
    for step in range(STEPS):
        images, labels = batch(seed=step)
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
    text = scrape(client.metrics_port)
    traffic = client.traffic()
    labels = {"job": "py-metrics", "rank": 0}
    assert traffic["uplink_wire_bytes"] > 0
    for counter in ("uplink_wire_bytes", "uplink_dense_bytes", "downlink_wire_bytes",
                    "downlink_dense_bytes"):
        assert value(text, f"entrograd_client_{counter}_total", **labels) == traffic[counter]
    # One compress observation per layer per step.
    assert value(text, "entrograd_client_compress_duration_seconds_count",
                 **labels) == layers * STEPS
    # Per-layer gauges, one series per parameter, named as the model names it.
    names = {l["layer"] for n, l, _ in series(text)
             if n == "entrograd_client_layer_keep_ratio"}
    assert names == {name for name, _ in model.named_parameters()}
    client.close()


def test_no_endpoint_unless_asked(aggregator):
    client = entrograd.Client(shards=[aggregator.address], job_id="py-no-metrics", rank=0,
                              world_size=1)
    assert client.metrics_port is None
    client.close()


def test_bad_metrics_addresses_are_named():
    with pytest.raises(entrograd.Error) as malformed:
        entrograd.Client(shards=["127.0.0.1:1"], job_id="j", rank=0, world_size=1,
                         metrics_listen="no-port-here")
    assert malformed.value.code == "INVALID_ARGUMENT"
    assert "metrics_listen" in str(malformed.value)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(entrograd.Error) as busy:
            entrograd.Client(shards=["127.0.0.1:1"], job_id="j", rank=0, world_size=1,
                             metrics_listen=f"127.0.0.1:{port}")
    assert busy.value.code == "UNAVAILABLE"
    assert "metrics_listen" in str(busy.value)
    with pytest.raises(TypeError, match="metrics_listen"):
        entrograd.Client(shards=["127.0.0.1:1"], job_id="j", rank=0, world_size=1,
                         metrics_listen=9100)
