// The emulator's vector_types.h: the two vector types the kernels and their
// launchers use, laid out and converted as CUDA's (uint3 is the type of
// threadIdx and blockIdx, dim3 of blockDim, gridDim and launch shapes).
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_VECTOR_TYPES_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_VECTOR_TYPES_H_

struct uint3 {
  unsigned int x, y, z;
};

// Unset dimensions are 1, and an integer converts implicitly to dim3(n), so
// that a launch can pass a plain block count.
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_VECTOR_TYPES_H_
