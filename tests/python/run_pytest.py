#!/usr/bin/python3
"""Runs one pytest file of the Python package's tests for ctest.

  /usr/bin/python3 run_pytest.py TEST_FILE [pytest args]

Exits 77 (ctest: skipped) with the reason on stderr when pytest is missing
or the entrograd package (with its extension entrograd._C) cannot be
imported from PYTHONPATH; otherwise pytest's exit status.
"""

import os
import sys

SKIP_RETURN_CODE = 77


def _skip(reason):
    print(f"SKIPPED {os.path.basename(sys.argv[1])}: {reason}", file=sys.stderr)
    sys.exit(SKIP_RETURN_CODE)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import pytest
    except ImportError as error:
        _skip(f"{sys.executable} cannot import pytest ({error}); install python3-pytest")
    try:
        import entrograd  # noqa: F401
    except ImportError as error:
        _skip(f"the entrograd package is not importable from "
              f"PYTHONPATH={os.environ.get('PYTHONPATH', '')} ({error}); it is "
              "built when CMake finds pybind11 (pybind11-dev) and a Python torch "
              "(python3-torch) sharing the C++ build's LibTorch, see the "
              "'entrograd: Python package' line of the configure output")
    # No cache or hypothesis database written next to the build.
    return pytest.main([sys.argv[1], "-v", "-p", "no:cacheprovider",
                        "-p", "no:hypothesispytest", *sys.argv[2:]])


if __name__ == "__main__":
    sys.exit(main())
