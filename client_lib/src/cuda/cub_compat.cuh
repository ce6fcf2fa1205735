// The CUB and Thrust pieces the selection kernels use: the real ones under
// nvcc, the emulator's (tests/cuda_emulation) in the emulated build; see
// cuda_compat.cuh. Apart from it so that only the files that use CUB
// include it. Private to the CUDA path.
#ifndef ENTROGRAD_CUDA_CUB_COMPAT_CUH_
#define ENTROGRAD_CUDA_CUB_COMPAT_CUH_

#include "cuda/cuda_compat.cuh"

#ifdef ENTROGRAD_CUDA_EMULATION
#include "cuda_emulation/cub_block_scan.h"
#include "cuda_emulation/cub_device_select.h"
#include "cuda_emulation/thrust_counting_iterator.h"
#else
#include <thrust/iterator/counting_iterator.h>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_select.cuh>
#endif

#endif  // ENTROGRAD_CUDA_CUB_COMPAT_CUH_
