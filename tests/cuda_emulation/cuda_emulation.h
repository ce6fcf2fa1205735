// What CUDA kernels and their launchers need to compile as C++ and run on
// the CPU emulator (client_lib/src/cuda/cuda_compat.cuh includes this under
// ENTROGRAD_CUDA_EMULATION): the device builtins and Launch. The CUB and
// Thrust pieces are cub_block_scan.h, cub_device_select.h and
// thrust_counting_iterator.h. Link entrograd_cuda_emulator, which also
// implements the CUDA runtime functions, instead of cudart.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_CUDA_EMULATION_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_CUDA_EMULATION_H_

#include "cuda_emulation/device_builtins.h"
#include "cuda_emulation/kernel_launch.h"

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_CUDA_EMULATION_H_
