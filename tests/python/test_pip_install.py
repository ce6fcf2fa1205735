"""`pip install --no-build-isolation --no-deps .`, offline, into a venv that
sees Debian's python3-torch: the installed package imports outside the
tree, works against a real aggregator, carries the CMake project's version,
and uninstalls. The build reuses this build tree (ENTROGRAD_CMAKE_BUILD_DIR)
so that the test costs seconds; the private-build path of setup.py is the
same code with a configure step before it (a cold build of the client
library and the module: minutes, too long for every CI run)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import binary_path

PIP_TIMEOUT_S = 300


def source_dir():
    return Path(__file__).resolve().parents[2]


def build_dir():
    path = os.environ.get("ENTROGRAD_BUILD_DIR")
    if not path or not (Path(path) / "CMakeCache.txt").is_file():
        pytest.skip(f"ENTROGRAD_BUILD_DIR is not a configured build tree ({path!r}); run under ctest")
    return Path(path)


def copy_package_sources(destination):
    """What pip reads: the package, setup.py, pyproject.toml, the README and
    CMakeLists.txt (the version). A copy, so setuptools' build-pip/ and
    egg-info are not written into the source tree."""
    root = source_dir()
    destination.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md", "CMakeLists.txt"):
        shutil.copy(root / name, destination / name)
    shutil.copytree(root / "python" / "entrograd", destination / "python" / "entrograd",
                    ignore=shutil.ignore_patterns("__pycache__", "*.in"))


def clean_environment(**extra):
    """No PYTHONPATH (the build tree's package must not be what imports), no
    index (offline), no pip self-check."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return environment


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("pip")
    venv_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv_dir)],
                   check=True, timeout=120)
    return root, venv_dir / "bin" / "python"


def pip_install(root, python, environment):
    sources = root / "src"
    if not sources.exists():
        copy_package_sources(sources)
    return subprocess.run(
        [str(python), "-m", "pip", "install", "--no-build-isolation", "--no-deps", str(sources)],
        cwd=root, env=environment, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)


def run_python(python, code, cwd, timeout=60):
    return subprocess.run([str(python), "-c", code], cwd=cwd, env=clean_environment(),
                          capture_output=True, text=True, timeout=timeout)


def test_a_build_dir_that_is_not_one_is_named(venv):
    root, python = venv
    missing = root / "no-such-build"
    result = pip_install(root, python, clean_environment(ENTROGRAD_CMAKE_BUILD_DIR=str(missing)))
    assert result.returncode != 0
    assert f"ENTROGRAD_CMAKE_BUILD_DIR={missing}: not a configured CMake build tree" in (
        result.stdout + result.stderr)


def test_installed_package_works_outside_the_tree_and_uninstalls(venv):
    root, python = venv
    result = pip_install(root, python,
                         clean_environment(ENTROGRAD_CMAKE_BUILD_DIR=str(build_dir())))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Successfully installed entrograd" in result.stdout

    version = re.search(r"project\(entrograd VERSION ([0-9.]+)",
                        (source_dir() / "CMakeLists.txt").read_text()).group(1)
    aggregator_binary = binary_path("ENTROGRAD_AGGREGATOR")
    from conftest import Aggregator
    aggregator = Aggregator(aggregator_binary)
    try:
        # One rank of a one-rank job: a real step through the installed
        # extension, and the version pip recorded.
        code = f"""
import importlib.metadata, sys, torch, entrograd
assert entrograd.__file__.startswith(sys.prefix), entrograd.__file__
assert entrograd._C.__file__.startswith(sys.prefix), entrograd._C.__file__
assert importlib.metadata.version("entrograd") == "{version}"
torch.manual_seed(0)
model = torch.nn.Linear(50, 40)
client = entrograd.Client(shards=["{aggregator.address}"], job_id="pip", rank=0, world_size=1)
optimizer = entrograd.DistributedOptimizer(model.named_parameters(), client, lr=0.1,
                                           policy="topk", rho=0.1, dense_below=0)
before = model.weight.detach().clone()
model(torch.randn(8, 50)).square().sum().backward()
stats = optimizer.step()
changed = int((model.weight != before).sum())
assert 0 < changed < model.weight.numel(), changed
client.close()
print("step ok", changed)
"""
        ran = run_python(python, code, cwd=root)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "step ok" in ran.stdout
    finally:
        aggregator.stop()

    removed = subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "entrograd"],
                             env=clean_environment(), capture_output=True, text=True,
                             timeout=120)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    gone = run_python(python, "import entrograd", cwd=root)
    assert gone.returncode != 0
    assert "No module named 'entrograd'" in gone.stderr
