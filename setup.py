"""pip's entry to the Python package `entrograd`: this project's CMake build
makes the extension entrograd._C, setuptools packages it with python/entrograd.

    .venv/bin/pip install --no-build-isolation --no-deps .

The extension must be built by CMake, not by setuptools: it links the C++
client library and checks (cmake/EntrogradPython.cmake) that the Python torch
is the very LibTorch the C++ libraries link. So build_ext configures this
project for the Python module alone (no tests, no benchmarks) in a private
build tree, builds the `entrograd_python` target and copies what it made.

ENTROGRAD_CMAKE_ARGS adds arguments to that configure (as for
scripts/build.sh). ENTROGRAD_CMAKE_BUILD_DIR=DIR reuses an already
configured build tree instead (e.g. the build/ of scripts/build.sh): only
what is out of date is rebuilt there. Setuptools' own files go to build-pip/, not to CMake's build/.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE_DIR = Path(__file__).resolve().parent
SETUPTOOLS_DIR = "build-pip"


def project_version():
    """The version in CMakeLists.txt's project(): one place to bump it."""
    text = (SOURCE_DIR / "CMakeLists.txt").read_text()
    match = re.search(r"project\(entrograd VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("CMakeLists.txt: no `project(entrograd VERSION x.y.z)`")
    return match.group(1)


class CMakeExtension(Extension):
    """An extension whose sources CMake knows; setuptools compiles nothing."""

    def __init__(self, name, target):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("ENTROGRAD_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = Path(build_dir).resolve()
            if not (build_dir / "CMakeCache.txt").is_file():
                raise RuntimeError(
                    f"ENTROGRAD_CMAKE_BUILD_DIR={build_dir}: not a configured "
                    "CMake build tree (no CMakeCache.txt)")
        else:
            build_dir = Path(self.build_temp).resolve() / "cmake"
            if not (build_dir / "CMakeCache.txt").is_file():
                self.configure(build_dir)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        self.run_or_explain(["cmake", "--build", str(build_dir), "--target",
                             ext.target, "--parallel", jobs], "building")
        self.copy_outputs(build_dir / "python" / "entrograd", ext)

    def configure(self, build_dir):
        build_dir.mkdir(parents=True, exist_ok=True)
        command = [
            "cmake", "-S", str(SOURCE_DIR), "-B", str(build_dir),
            # As scripts/build.sh: -O2 without debug info.
            "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
            "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG",
            # ON, not AUTO: a missing piece is a failed install naming it.
            "-DENTROGRAD_PYTHON=ON",
            f"-DENTROGRAD_PYTHON_EXECUTABLE={sys.executable}",
            "-DENTROGRAD_BUILD_TESTS=OFF", "-DENTROGRAD_BUILD_BENCH=OFF",
            # The CUDA kernels serve a CUDA LibTorch, which Debian's is not;
            # ENTROGRAD_CMAKE_ARGS="-DENTROGRAD_CUDA=ON" for one that is.
            "-DENTROGRAD_CUDA=OFF",
        ] + shlex.split(os.environ.get("ENTROGRAD_CMAKE_ARGS", ""))
        if shutil.which("ninja"):
            command += ["-G", "Ninja"]
        self.run_or_explain(command, "configuring")

    def copy_outputs(self, package_dir, ext):
        """The extension and the _build_config.py CMake wrote beside it."""
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = package_dir / ("_C" + suffix)
        if not built.is_file():
            found = sorted(p.name for p in package_dir.glob("_C*.so"))
            raise RuntimeError(
                f"{built} was not built; {package_dir} has {found or 'no _C*.so'}: "
                f"the build tree is for another Python than {sys.executable}")
        destination = Path(self.get_ext_fullpath(ext.name))
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, destination)
        shutil.copyfile(package_dir / "_build_config.py",
                        destination.parent / "_build_config.py")

    @staticmethod
    def run_or_explain(command, what):
        try:
            subprocess.run(command, check=True)
        except FileNotFoundError as error:
            raise RuntimeError(f"{what} entrograd._C: {error.filename} not found "
                               "(install cmake and ninja-build)") from error
        except subprocess.CalledProcessError as error:
            raise RuntimeError(f"{what} entrograd._C failed ({error.returncode}): "
                               f"{' '.join(command)}") from error


os.makedirs(SETUPTOOLS_DIR, exist_ok=True)
setup(
    version=project_version(),
    packages=["entrograd"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("entrograd._C", target="entrograd_python")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": SETUPTOOLS_DIR},
             "egg_info": {"egg_base": SETUPTOOLS_DIR}},
    zip_safe=False,
)
