"""Model weights in the LibTorch C++ module format.

torch::save(module, path) in C++ writes a serialize archive (one nested
archive per submodule); Python's torch.save writes a pickle that C++ cannot
read. A Python rank that trains next to C++ workers shares its initial
weights through this format: entrograd-worker resumes from
<out>/checkpoint/model.pt written by save_cpp_module.
"""

import os

from . import _C


def save_cpp_module(module, path):
    """Writes module's parameters and buffers as torch::save(module, path)
    does. Raises InvalidArgumentError for clashing names, Error INTERNAL on
    I/O failure."""
    _C.save_module_archive(os.fspath(path), list(module.named_parameters()),
                           list(module.named_buffers()))


def load_cpp_module(module, path):
    """Copies, in place, every parameter and buffer of module from a file
    torch::save(module, path) wrote. Raises InvalidArgumentError when the
    file does not load, lacks an entry or has another shape (naming it)."""
    _C.load_module_archive(os.fspath(path), list(module.named_parameters()),
                           list(module.named_buffers()))
