// The CUB and Thrust pieces the selection kernels use, apart from
// cuda_compat.cuh so that only the files that use CUB include them. The
// emulated build (entrograd_cuda_emulated) finds its own versions of these
// headers first on its include path. Private to the CUDA path.
#ifndef ENTROGRAD_CUDA_CUB_COMPAT_CUH_
#define ENTROGRAD_CUDA_CUB_COMPAT_CUH_

#include <thrust/iterator/counting_iterator.h>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_select.cuh>

#include "cuda/cuda_compat.cuh"

#endif  // ENTROGRAD_CUDA_CUB_COMPAT_CUH_
