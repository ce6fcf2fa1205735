# Decides whether the Python package (python/, module entrograd._C) is built.
# Sets ENTROGRAD_HAVE_PYTHON (ON/OFF) and, when ON,
# ENTROGRAD_TORCH_PYTHON_LIBRARY (libtorch_python.so),
# ENTROGRAD_PYTHON_LIBTORCH (realpath of the shared libtorch.so),
# ENTROGRAD_PYTHON_CXX11_ABI (0/1) and ENTROGRAD_PYBIND11_ABI_DEFINITIONS;
# ENTROGRAD_PYTHON_EXECUTABLE is a cache
# variable (default /usr/bin/python3).
#
# The module is loaded into a Python process that has already imported
# torch, so it shares that process's LibTorch: the LibTorch the entrograd C++
# libraries link (find_package(Torch), libtorch-dev) must be the very
# libraries of the Python torch (python3-torch), with the same
# _GLIBCXX_USE_CXX11_ABI. Two LibTorch copies in one process, or a
# different std::string ABI, corrupt tensors silently. On Debian 12 the
# Python package's torch/lib/*.so are links to the libtorch1.13 libraries
# libtorch-dev links, so this holds; a pip-installed torch would not pass
# the check and the module is then not built (AUTO) or the build fails (ON).
set(ENTROGRAD_HAVE_PYTHON OFF)
# Debian's interpreter, where python3-torch lives; not whatever python3 is
# first on PATH (a pyenv or venv interpreter lacks Debian's packages).
set(ENTROGRAD_PYTHON_EXECUTABLE /usr/bin/python3 CACHE FILEPATH
    "Python interpreter the entrograd package is built for (it must import torch)")

# Appends a reason to `reasons` in the caller's scope.
macro(entrograd_python_missing reason)
  list(APPEND entrograd_python_reasons "${reason}")
endmacro()

set(entrograd_python_reasons)
if(NOT ENTROGRAD_PYTHON STREQUAL "OFF")
  if(NOT ENTROGRAD_WITH_TORCH)
    entrograd_python_missing("ENTROGRAD_WITH_TORCH is OFF")
  elseif(ENTROGRAD_SANITIZE)
    # An instrumented module cannot be loaded into an uninstrumented python3.
    entrograd_python_missing("ENTROGRAD_SANITIZE=${ENTROGRAD_SANITIZE}")
  elseif(NOT EXISTS "${ENTROGRAD_PYTHON_EXECUTABLE}")
    entrograd_python_missing("${ENTROGRAD_PYTHON_EXECUTABLE} not found")
  else()
    # One line: version;cxx11 abi;realpath of libtorch.so;libtorch_python.so;
    # the pybind11 ABI tags torch was built with (an extension must use the
    # same, or pybind11 keeps separate type registries).
    execute_process(
      COMMAND "${ENTROGRAD_PYTHON_EXECUTABLE}" -c
        "import os, torch, torch.utils.cpp_extension as c\nlib = c.library_paths()[0]\nprint(';'.join([torch.__version__, str(int(torch._C._GLIBCXX_USE_CXX11_ABI)), os.path.realpath(os.path.join(lib, 'libtorch.so')), os.path.join(lib, 'libtorch_python.so'), torch._C._PYBIND11_COMPILER_TYPE, torch._C._PYBIND11_STDLIB, torch._C._PYBIND11_BUILD_ABI]))"
      RESULT_VARIABLE probe_status
      OUTPUT_VARIABLE probe_output
      ERROR_VARIABLE probe_error
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT probe_status EQUAL 0)
      entrograd_python_missing(
        "${ENTROGRAD_PYTHON_EXECUTABLE} cannot import torch (install python3-torch)")
    else()
      list(GET probe_output 0 python_torch_version)
      list(GET probe_output 1 python_torch_cxx11_abi)
      list(GET probe_output 2 python_libtorch)
      list(GET probe_output 3 python_libtorch_python)
      list(GET probe_output 4 python_pybind11_compiler_type)
      list(GET probe_output 5 python_pybind11_stdlib)
      list(GET probe_output 6 python_pybind11_build_abi)
      # The LibTorch find_package(Torch) found, as the C++ libraries link it.
      get_filename_component(cmake_libtorch_real "${TORCH_LIBRARY}" REALPATH)
      set(cmake_cxx11_abi 0)
      if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=1")
        set(cmake_cxx11_abi 1)
      endif()
      if(NOT cmake_libtorch_real STREQUAL python_libtorch)
        entrograd_python_missing(
          "the Python torch ${python_torch_version} loads ${python_libtorch}, "
          "but the C++ libraries link ${cmake_libtorch_real}: two LibTorch "
          "copies cannot share tensors (use Debian's python3-torch with libtorch-dev)")
      elseif(NOT cmake_cxx11_abi STREQUAL python_torch_cxx11_abi)
        entrograd_python_missing(
          "_GLIBCXX_USE_CXX11_ABI differs: ${python_torch_cxx11_abi} in the "
          "Python torch, ${cmake_cxx11_abi} in TORCH_CXX_FLAGS")
      elseif(NOT EXISTS "${python_libtorch_python}")
        entrograd_python_missing("${python_libtorch_python} not found")
      else()
        set(ENTROGRAD_TORCH_PYTHON_LIBRARY "${python_libtorch_python}")
        set(ENTROGRAD_PYTHON_LIBTORCH "${python_libtorch}")
        set(ENTROGRAD_PYTHON_CXX11_ABI "${python_torch_cxx11_abi}")
        set(ENTROGRAD_PYBIND11_ABI_DEFINITIONS
            "PYBIND11_COMPILER_TYPE=\"${python_pybind11_compiler_type}\""
            "PYBIND11_STDLIB=\"${python_pybind11_stdlib}\""
            "PYBIND11_BUILD_ABI=\"${python_pybind11_build_abi}\"")
      endif()
    endif()
    if(NOT entrograd_python_reasons)
      # pybind11's config requires the Python headers (a hard error without
      # them), so look first.
      execute_process(
        COMMAND "${ENTROGRAD_PYTHON_EXECUTABLE}" -c
          "import sysconfig; print(sysconfig.get_paths()['include'])"
        OUTPUT_VARIABLE python_include_dir
        OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(NOT EXISTS "${python_include_dir}/Python.h")
        entrograd_python_missing("Python.h not found in '${python_include_dir}' (install python3-dev)")
      endif()
    endif()
    if(NOT entrograd_python_reasons)
      # FindPython (not pybind11's legacy FindPythonLibsNew), pinned to the
      # interpreter above.
      set(PYBIND11_FINDPYTHON ON)
      set(Python_EXECUTABLE "${ENTROGRAD_PYTHON_EXECUTABLE}")
      find_package(pybind11 2.6 CONFIG QUIET)
      if(NOT pybind11_FOUND)
        entrograd_python_missing("pybind11 not found (install pybind11-dev)")
      endif()
    endif()
  endif()
  if(entrograd_python_reasons)
    list(JOIN entrograd_python_reasons "; " reasons_text)
    if(ENTROGRAD_PYTHON STREQUAL "ON")
      message(FATAL_ERROR "ENTROGRAD_PYTHON=ON but the Python package cannot "
                          "be built: ${reasons_text}")
    endif()
    message(STATUS "entrograd: Python package OFF (${reasons_text})")
  else()
    set(ENTROGRAD_HAVE_PYTHON ON)
    message(STATUS "entrograd: Python package ON (torch ${python_torch_version}, "
                   "${python_libtorch}, cxx11 abi ${python_torch_cxx11_abi})")
  endif()
else()
  message(STATUS "entrograd: Python package OFF (ENTROGRAD_PYTHON=OFF)")
endif()
