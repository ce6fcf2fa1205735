#!/usr/bin/python3
"""One rank of test_comm_hook.py: trains two DistributedDataParallel copies
of the same model on the same batches, one with DDP's own allreduce and one
with entrograd.comm_hook, and prints one JSON line: the parameter hash of
each after every step, the entrograd client's traffic, and what its
/metrics endpoint reported (the hook reports there as the optimizer does).

  comm_hook_rank.py --shard HOST:PORT --init_method tcp://HOST:PORT
                    --rank R --world_size W --job_id J --policy P --steps N
"""

import argparse
import copy
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import entrograd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_cnn import FashionCnn, batch  # noqa: E402
from prometheus_text import scrape, series, value  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    for name in ("shard", "init_method", "job_id", "policy"):
        parser.add_argument(f"--{name}", required=True)
    for name in ("rank", "world_size", "steps"):
        parser.add_argument(f"--{name}", type=int, required=True)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=args.init_method, rank=args.rank,
                            world_size=args.world_size)
    torch.manual_seed(3)
    reference = DistributedDataParallel(FashionCnn())
    hooked = DistributedDataParallel(copy.deepcopy(reference.module))
    client = entrograd.Client(shards=[args.shard], job_id=args.job_id, rank=args.rank,
                              world_size=args.world_size, merge_timeout=60.0,
                              metrics_listen="127.0.0.1:0", per_layer_metrics=True)
    state = entrograd.CommHookState(client, hooked.module.named_parameters(),
                                    policy=args.policy, rho=0.01, dense_below=1000)
    hooked.register_comm_hook(state, entrograd.comm_hook)

    hashes = {"reference": [], "hooked": []}
    for ddp, key in ((reference, "reference"), (hooked, "hooked")):
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
        for step in range(args.steps):
            images, labels = batch(seed=100 * step + args.rank)
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(ddp(images), labels).backward()
            optimizer.step()
            hashes[key].append(
                f"{entrograd.hash_parameters(list(ddp.module.parameters())):016x}")
    text = scrape(client.metrics_port)
    labels = {"job": args.job_id, "rank": args.rank}
    metrics = {
        "uplink_wire_bytes": value(text, "entrograd_client_uplink_wire_bytes_total", **labels),
        "compress_count": value(text, "entrograd_client_compress_duration_seconds_count",
                                **labels),
        "entropy_layers": sorted(l["layer"] for n, l, _ in series(text)
                                 if n == "entrograd_client_layer_entropy_nats"),
    }
    print(json.dumps({"rank": args.rank, "hashes": hashes, "steps": state.step,
                      "traffic": client.traffic(), "metrics": metrics,
                      "parameters": sorted(n for n, _ in hooked.module.named_parameters())}),
          flush=True)
    client.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
