"""entrograd.DistributedOptimizer: entrograd for a PyTorch training loop.

Wraps entrograd::DistributedOptimizer
(client_lib/include/entrograd/torch/distributed_optimizer.h):

    client = entrograd.Client(shards=["10.0.0.1:50051"], job_id="job",
                              rank=rank, world_size=world_size)
    optimizer = entrograd.DistributedOptimizer(model.named_parameters(),
                                               client, lr=0.1)
    for images, labels in loader:
        loss = criterion(model(images), labels)
        loss.backward()          # C++ hooks compress and send each layer
        stats = optimizer.step() # wait for merged layers, apply, next step

Every parameter's gradient is compressed in a C++ autograd hook as soon as
backward produces it (no Python runs per tensor per step); step() waits for
the merged layers and applies them with the GIL released. With momentum
correction (the default) momentum is applied locally before compression
and the merged update is applied as plain SGD (layers sent whole keep a
momentum buffer); every rank applies the same bytes, so replicas stay
bitwise identical. Without it, the merged update is left in each .grad and
the torch.optim optimizer passed as `optimizer` steps on it.

Resuming: pass `state=` (a state_dict() or a file from save_state(), which
is also what the C++ entrograd-worker writes as optimizer.pt): the client
Joins as having applied the step before the state's, which the shards need
to know before the first update. load_state_dict() / load_state() later
accept only state of the current step.

Errors: entrograd.Error subclasses (see entrograd.errors); TypeError for
arguments of the wrong type. After a failed step() every later step()
raises FailedPreconditionError: restart from a checkpoint.

Thread safety: call step(), state_dict() and the loads from the thread that
runs backward, never during a backward pass.
"""

import os

import torch

from . import _C
from .client import Client
from .errors import FailedPreconditionError, InvalidArgumentError
from .options import compression_options


def _named_parameters(named_parameters):
    named = list(named_parameters)
    for item in named:
        if (not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], str)
                or not isinstance(item[1], torch.Tensor)):
            raise TypeError("named_parameters must yield (name, tensor) pairs, "
                            "as model.named_parameters() does")
    for name, tensor in named:
        if not tensor.requires_grad:
            raise InvalidArgumentError(
                "INVALID_ARGUMENT",
                f'parameter "{name}" does not require a gradient; pass only '
                "the parameters being trained, in the same order on every rank")
    return named


def _state_from(state):
    if state is None or isinstance(state, dict):
        return state
    if isinstance(state, (str, os.PathLike)):
        return _C.read_state_file(os.fspath(state))
    raise TypeError("state must be a state_dict(), a path or None, "
                    f"not {type(state).__name__}")


class DistributedOptimizer:
    """Compresses, exchanges and applies every step's gradients.

    named_parameters: model.named_parameters(), float32, on cpu (or cuda),
      every one trained, in the same order on every rank.
    client: an entrograd.Client not yet connected; this connects it.
    lr: learning rate (> 0). weight_decay: L2 added before compression.
    policy, rho, min_keep_ratio, budget_density, threshold, intervals,
      dense_below, warmup_steps, momentum_correction, momentum, entropy_of,
      share_hold_steps: the compression (entrograd.options.compression_options;
      None keeps the C++ default). momentum_correction defaults to True here.
    merged_keep_factor: global top-k. 0 (the default) takes the union of the
      ranks' entries back; c in [1, 1e6] takes only the ceil(c * largest k)
      merged entries of largest magnitude per compressed layer, and this
      rank's entries left out go back into its residual.
    accumulate_in_update_space: keep the residual and velocity in update
      units (momentum correction only): setting lr from a to b scales them by
      a / b, so every gradient is applied at the rate of its own step. False
      (the default) is the method as specified; under a constant lr the two
      are the same bytes.
    optimizer: a torch.optim optimizer over the same parameters, required
      when momentum_correction is False (it steps on the merged .grad).
    state: resume from a state_dict() or a save_state() file.
    """

    def __init__(self, named_parameters, client, *, lr, policy=None, rho=None,
                 momentum_correction=True, momentum=None, weight_decay=0.0,
                 min_keep_ratio=None, budget_density=None, threshold=None,
                 intervals=None, dense_below=None, warmup_steps=None,
                 entropy_of=None, share_hold_steps=None, merged_keep_factor=0.0,
                 accumulate_in_update_space=False, optimizer=None, state=None):
        if not isinstance(client, Client):
            raise TypeError(f"client must be entrograd.Client, not {type(client).__name__}")
        named = _named_parameters(named_parameters)
        options = compression_options(
            policy=policy, rho=rho, min_keep_ratio=min_keep_ratio,
            budget_density=budget_density, threshold=threshold,
            intervals=intervals, dense_below=dense_below,
            warmup_steps=warmup_steps, momentum_correction=momentum_correction,
            momentum=momentum, entropy_of=entropy_of,
            share_hold_steps=share_hold_steps)
        if not options.momentum_correction and optimizer is None:
            raise InvalidArgumentError(
                "INVALID_ARGUMENT",
                "without momentum correction a torch.optim optimizer must step "
                "on the merged gradient: pass optimizer=")
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError("optimizer must be a torch.optim.Optimizer, "
                            f"not {type(optimizer).__name__}")
        state = _state_from(state)
        first_step = int(state["step"]) if state is not None else 0
        client._connect(named, applied_step=first_step - 1)
        self._client = client
        self._inner = optimizer if not options.momentum_correction else None
        self._impl = _C.DistributedOptimizer(named, client._impl, options, float(lr),
                                             float(weight_decay), first_step,
                                             float(merged_keep_factor),
                                             bool(accumulate_in_update_space))
        self._parameters = [tensor for _, tensor in named]
        self.last_stats = None
        if state is not None:
            self._impl.load_state_dict(state)

    @property
    def lr(self):
        """The learning rate of the next steps (lr= until set)."""
        return self._impl.lr

    @lr.setter
    def lr(self, value):
        """Sets the rate from the next step() on, for a schedule (set the same
        on every rank, between steps). Momentum correction keeps gradients
        in its buffers, so nothing is rescaled. Raises InvalidArgumentError
        unless finite and > 0, FailedPreconditionError without momentum
        correction (set the torch optimizer's rate then)."""
        self._impl.lr = float(value)

    def layer_totals(self):
        """What share of each layer was sent and applied since this
        optimizer was made: a list, in the parameters' order, of dicts with
        name, numel, steps, sent_entries (this rank's, a layer sent dense
        counting numel), merged_entries (of the merged updates applied),
        sent_share and merged_share (entries / (steps * numel))."""
        return self._impl.layer_totals()

    @property
    def step_count(self):
        """The step the next backward pass belongs to."""
        return self._impl.current_step

    def step(self):
        """Completes the step: sends layers whose hook did not fire (as
        zeros), waits for every merged layer and applies it (GIL released),
        then steps the torch optimizer when one was given. Returns the
        step's StepStats (also in .last_stats): step, compress_seconds,
        wait_seconds, apply_seconds and the uplink/downlink wire and dense
        bytes of the step."""
        stats = self._impl.step()
        if self._inner is not None:
            self._inner.step()
        self.last_stats = stats
        return stats

    def zero_grad(self, set_to_none=True):
        """Clears .grad (step() already does under momentum correction)."""
        for parameter in self._parameters:
            if parameter.grad is None:
                continue
            if set_to_none:
                parameter.grad = None
            else:
                parameter.grad.zero_()

    def state_dict(self):
        """The step and every layer's residual and velocity (and the
        momentum buffers of layers sent whole): the entries of the C++
        checkpoint, as a dict torch.save can store. A torch optimizer given
        as `optimizer` is the caller's to save."""
        return self._impl.state_dict()

    def load_state_dict(self, state):
        """Restores state of the current step (resuming at another step
        needs DistributedOptimizer(..., state=...)). Raises
        InvalidArgumentError when it does not fit the model and options
        (nothing changes then)."""
        self._check_step(state)
        self._impl.load_state_dict(state)

    def save_state(self, path):
        """Writes the state as the C++ SaveState does (entrograd-worker's
        optimizer.pt). Raises Error INTERNAL on I/O failure."""
        self._impl.save_state(os.fspath(path))

    def load_state(self, path):
        """load_state_dict of a save_state() file."""
        self.load_state_dict(_C.read_state_file(os.fspath(path)))

    def _check_step(self, state):
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict, not {type(state).__name__}")
        step = state.get("step")
        if step != self.step_count:
            raise FailedPreconditionError(
                "FAILED_PRECONDITION",
                f"the state is of step {step}, the optimizer at step "
                f"{self.step_count}: to resume at another step pass it as "
                "DistributedOptimizer(..., state=...), so that the client "
                "Joins as having applied the step before it")
