// The emulator's crt/host_defines.h: CUDA's function qualifiers, which mean
// nothing to a C++ compiler (every function runs on the host). Defined as
// the CUDA toolkit defines them for host compilers. __shared__ has a
// meaning here and lives in device_builtins.h.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_HOST_DEFINES_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_HOST_DEFINES_H_

#define __host__
#define __device__
#define __global__
#define __forceinline__ __inline__ __attribute__((always_inline))
// Register and occupancy limits are not emulated.
#define __launch_bounds__(...)

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_HOST_DEFINES_H_
