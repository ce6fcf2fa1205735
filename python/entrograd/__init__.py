"""entrograd: entropy-based gradient compression for data-parallel training.

The Python front end of the C++ client library: the compression runs in
C++ autograd hooks, the exchange over gRPC with the entrograd-aggregator
shards, and tensors cross without copies (the module shares the Python
torch's LibTorch).

  Client                 connection of one rank to the aggregator shards
  DistributedOptimizer   hooks, step(), state_dict() / load_state_dict()
  comm_hook, CommHookState   DistributedDataParallel.register_comm_hook
  TLS                    PEM files for TLS / mTLS
  LayerCompressor        the compression core on one tensor
  hash_parameters        the Join's hash of a model's parameters
  save_cpp_module, load_cpp_module   weights in the C++ torch::save format
  retain_freed_memory    keep the memory a step frees for the next step
  Error (and subclasses) every failure, with .code (gRPC code name)
"""

import os

import torch  # loads LibTorch before the extension needs it

from . import _build_config


def _check_torch():
    library = os.path.realpath(
        os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch.so"))
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    if library != _build_config.LIBTORCH or abi != _build_config.CXX11_ABI:
        raise ImportError(
            f"entrograd was built against {_build_config.LIBTORCH} (cxx11 abi "
            f"{_build_config.CXX11_ABI}), but this torch {torch.__version__} "
            f"({torch.__file__}) loads {library} (cxx11 abi {abi}); two LibTorch "
            "copies cannot share tensors: use the torch the package was built "
            "with (Debian's python3-torch) or rebuild entrograd against this one")


_check_torch()

from . import _C  # noqa: E402
from .client import TLS, Client
from .ddp_hook import CommHookState, comm_hook
from .errors import (AbortedError, DeadlineExceededError, Error,
                     FailedPreconditionError, InvalidArgumentError,
                     OutOfRangeError, UnavailableError)
from .optimizer import DistributedOptimizer
from .options import compression_options
from .weights import load_cpp_module, save_cpp_module

StepStats = _C.StepStats


class LayerCompressor(_C.LayerCompressor):
    """The compression core (ALGORITHM.md 5.1-5.7) of one layer of `numel`
    elements; keyword arguments as compression_options. compress(gradient,
    step) reads a contiguous float32 CPU tensor in place and returns a dict:
    step, numel, k, dense, indices (int64), values (float32), entropy,
    effective_fraction, keep_ratio. .residual and .velocity are copies.
    Raises InvalidArgumentError for a tensor of another dtype, device,
    layout or size, or non-finite values. Not thread-safe."""

    def __init__(self, numel, **options):
        super().__init__(numel, compression_options(**options))


def retain_freed_memory():
    """Make glibc keep the memory a training step frees for the next step
    (blocks up to 32 MiB; the heap is no longer trimmed), instead of giving
    it back to the kernel and faulting every page in again next step. Call
    it once at start-up, before training. On the Fashion-MNIST CNN it cut
    forward/backward by about a third, and it is what entrograd-worker does
    by default (--retain_freed_memory); resident memory then stays at the
    peak of a step. Process-wide; raises FailedPreconditionError when the C
    library is not glibc."""
    _C.retain_freed_memory()


def hash_parameters(tensors):
    """FNV-1a 64 of the float32 values of `tensors` in order (the Join's
    initial_params_hash; equal replicas have equal hashes)."""
    return _C.hash_parameters([t.detach() for t in tensors])


__all__ = [
    "AbortedError", "Client", "CommHookState", "DeadlineExceededError",
    "DistributedOptimizer", "Error", "FailedPreconditionError", "InvalidArgumentError",
    "LayerCompressor", "OutOfRangeError", "StepStats", "TLS",
    "UnavailableError", "comm_hook", "compression_options", "hash_parameters",
    "load_cpp_module", "retain_freed_memory", "save_cpp_module",
]
