"""entrograd.retain_freed_memory(): after it, glibc serves a 16 MiB block
from the heap (no new mapping) and keeps the heap when it is freed; before
it, the same block is mapped. Process-wide, so each check runs in a fresh
interpreter; glibc's own counters (mallinfo2), not timings, are asserted."""

import json
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent("""
    import ctypes, json, sys
    import entrograd

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
            "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    if sys.argv[1] == "retain":
        entrograd.retain_freed_memory()
    mapped_before = libc.mallinfo2().hblks
    block = libc.malloc(16 << 20)
    ctypes.memset(block, 1, 16 << 20)
    with_block = libc.mallinfo2()
    libc.free(block)
    after_free = libc.mallinfo2()
    print(json.dumps({"new_mappings": with_block.hblks - mapped_before,
                      "heap_with_block": with_block.arena,
                      "heap_after_free": after_free.arena}))
""")


def probe(mode):
    result = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True,
                            text=True, timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_retained_blocks_come_from_the_heap_and_stay_after_free():
    retained = probe("retain")
    assert retained["new_mappings"] == 0, retained
    assert retained["heap_after_free"] >= retained["heap_with_block"], retained


def test_glibc_defaults_map_the_same_block():
    # The control: without the call, the probe sees what the test above
    # rules out, so that test can fail.
    defaults = probe("defaults")
    assert (defaults["new_mappings"] == 1 or
            defaults["heap_after_free"] < defaults["heap_with_block"]), defaults


def test_is_exported():
    import entrograd
    assert "retain_freed_memory" in entrograd.__all__
    with pytest.raises(TypeError):
        entrograd.retain_freed_memory(1)
