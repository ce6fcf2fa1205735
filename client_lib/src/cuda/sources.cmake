# The sources of entrograd_cuda, in one list for the two builds of them:
# nvcc's (CMakeLists.txt here) and the CPU emulator's
# (tests/cuda_emulation), which must compile exactly the same files. The
# emulator's build reads this file without nvcc, where this directory's
# CMakeLists.txt is never added. Absolute paths: include() runs in the
# including directory.
set(entrograd_cuda_sources
  "${CMAKE_CURRENT_LIST_DIR}/accumulate_launch.cu"
  "${CMAKE_CURRENT_LIST_DIR}/device_compressor.cc"
  "${CMAKE_CURRENT_LIST_DIR}/device_workspace.cc"
  "${CMAKE_CURRENT_LIST_DIR}/select_launch.cu"
)
