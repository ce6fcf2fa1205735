"""entrograd as a DistributedDataParallel communication hook.

    ddp = torch.nn.parallel.DistributedDataParallel(model)
    client = entrograd.Client(shards=[...], job_id="job", rank=rank,
                              world_size=world_size)
    state = entrograd.CommHookState(client, ddp.module.named_parameters(),
                                    policy="entropy", rho=0.01)
    ddp.register_comm_hook(state, entrograd.comm_hook)
    # then the usual loop: loss.backward(); torch_optimizer.step()

Instead of DDP's allreduce, every bucket's gradients are compressed (one
LayerCompressor per parameter, keeping its residual), sent to the entrograd
aggregator shards, and replaced by the merged update: (sum over ranks in
ascending rank order of what each sent) / world_size, the same bytes on
every rank. The torch optimizer then steps on it. Each parameter is a layer
of the Join's table, so DDP may regroup its buckets (it does after the first
iteration) without changing what goes on the wire. Under policy="dense" the
result is DDP's own average bit for bit (halving is exact in float32).

There is no momentum correction here (the momentum lives in the torch
optimizer, after the hook): use DistributedOptimizer for that. The hook
compresses and waits in the backward pass (the GIL released meanwhile) and
returns a completed future. Only CPU float32 gradients; every parameter
must get a gradient every step (DDP's find_unused_parameters=False).

Errors: entrograd.Error subclasses raised from the hook surface from
backward() (ABORTED when a rank died, UNAVAILABLE, DEADLINE_EXCEEDED).
Thread safety: DDP calls the hook for one bucket at a time.
"""

import torch

from . import _C
from .client import Client
from .errors import FailedPreconditionError, InvalidArgumentError
from .options import compression_options


class CommHookState:
    """What comm_hook needs: the connected client, one compressor per
    parameter and the step. Connects `client` (not yet connected) with the
    layer table of `named_parameters` (model.named_parameters(), the same
    order on every rank; DDP has made the replicas equal). Compression
    keywords as entrograd.compression_options (momentum correction is not
    available here). Raises InvalidArgumentError / UnavailableError as
    DistributedOptimizer does."""

    def __init__(self, client, named_parameters, **compression):
        if not isinstance(client, Client):
            raise TypeError(f"client must be entrograd.Client, not {type(client).__name__}")
        if compression.get("momentum_correction"):
            raise InvalidArgumentError(
                "INVALID_ARGUMENT", "momentum_correction is not available in a "
                "comm hook (the momentum is the torch optimizer's, after the "
                "hook); use entrograd.DistributedOptimizer")
        options = compression_options(momentum_correction=False, **compression)
        named = [(name, tensor) for name, tensor in named_parameters if tensor.requires_grad]
        client._connect(named, applied_step=-1)
        self.client = client
        self.step = 0
        self._layer_of = {tensor.data_ptr(): index for index, (_, tensor) in enumerate(named)}
        self._compressors = [_C.LayerCompressor(tensor.numel(), options) for _, tensor in named]
        self._names = [name for name, _ in named]

    def _layer(self, parameter):
        layer = self._layer_of.get(parameter.data_ptr())
        if layer is None:
            raise FailedPreconditionError(
                "FAILED_PRECONDITION",
                "a bucket holds a parameter CommHookState was not given")
        return layer


def comm_hook(state, bucket):
    """The DDP communication hook (register_comm_hook(state, comm_hook))."""
    gradients = bucket.gradients()
    layers = [state._layer(parameter) for parameter in bucket.parameters()]
    for layer, gradient in zip(layers, gradients):
        _C.send_compressed(state.client._impl, state.step, layer,
                           state._compressors[layer], gradient.contiguous().view(-1))
    buffer = bucket.buffer()
    for layer, gradient in zip(layers, gradients):
        merged = torch.empty(gradient.numel(), dtype=torch.float32)
        _C.wait_merged_into(state.client._impl, state.step, layer, merged)
        gradient.copy_(merged.view_as(gradient))
    if bucket.is_last():
        _C.mark_applied(state.client._impl, state.step)
        state.step += 1
    future = torch.futures.Future()
    future.set_result(buffer)
    return future
