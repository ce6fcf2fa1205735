"""Fixtures of the Python package's tests: a real entrograd-aggregator
process, and the paths ctest passes in the environment."""

import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time

import pytest
import torch

STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


def binary_path(variable):
    """The path in environment `variable` (set by tests/python/CMakeLists.txt);
    skips the test when it is unset or missing."""
    path = os.environ.get(variable)
    if not path or not os.path.isfile(path):
        pytest.skip(f"{variable} is not set to a built binary ({path!r}); run under ctest")
    return path


class Aggregator:
    """entrograd-aggregator as a child process on an ephemeral port."""

    PORT_LINE = re.compile(r"serving on port (\d+), metrics on port (\d+)")

    def __init__(self, binary, extra_args=()):
        self._stderr = tempfile.TemporaryFile()
        self._lines = queue.Queue()
        self.process = subprocess.Popen(
            [binary, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
             "--round_timeout=60s", *extra_args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr,
            text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.port = self._wait_for_port()
        self.address = f"127.0.0.1:{self.port}"

    def _read(self):
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _wait_for_port(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise AssertionError(f"no 'serving on port' line within "
                                     f"{STARTUP_TIMEOUT_S} s:\n{self.stderr_tail()}") from None
            if line is None:
                raise AssertionError(f"entrograd-aggregator exited "
                                     f"({self.process.wait()}):\n{self.stderr_tail()}")
            match = self.PORT_LINE.search(line)
            if match:
                return int(match.group(1))

    def stderr_tail(self, limit=4000):
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-limit:]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=5)
        self._stderr.close()


@pytest.fixture(scope="module")
def aggregator():
    """A running entrograd-aggregator, shared by a test file's tests (each
    test uses its own job id)."""
    server = Aggregator(binary_path("ENTROGRAD_AGGREGATOR"))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread, as entrograd-worker runs: every reduction in a
    fixed order, so runs repeat bit for bit."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
