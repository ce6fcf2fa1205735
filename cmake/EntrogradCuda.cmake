# Decides whether the CUDA kernels are built. nvcc usually lives in
# /usr/local/cuda/bin, which is not always on PATH, so look there too.
# Sets ENTROGRAD_HAVE_CUDA (ON/OFF) for the rest of the build.
set(ENTROGRAD_HAVE_CUDA OFF)
if(NOT ENTROGRAD_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(ENTROGRAD_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
    if(ENTROGRAD_NVCC)
      set(CMAKE_CUDA_COMPILER "${ENTROGRAD_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_80 (A100) and sm_90 (H100/H200) as real code, plus PTX for newer GPUs.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    set(ENTROGRAD_HAVE_CUDA ON)
  elseif(ENTROGRAD_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ENTROGRAD_CUDA=ON but no working nvcc was found; "
                        "set CMAKE_CUDA_COMPILER or use -DENTROGRAD_CUDA=AUTO")
  endif()
endif()
message(STATUS "entrograd: CUDA kernels ${ENTROGRAD_HAVE_CUDA}")
