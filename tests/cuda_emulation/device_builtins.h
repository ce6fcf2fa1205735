// What CUDA device code may use without including anything, for kernels
// compiled as C++ on the emulator (block_runner.h): __shared__, barriers,
// warp shuffles, integer and floating-point atomics, the bit-cast and
// rounding intrinsics, and CUDA's min/max over mixed integer types. Only
// what the entrograd kernels use, each with CUDA's exact results. Part of
// the emulator's cuda_runtime.h (shim/), as they are part of CUDA's;
// __half and __nv_bfloat16 are in shim/cuda_fp16.h and shim/cuda_bf16.h.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_DEVICE_BUILTINS_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_DEVICE_BUILTINS_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "cuda_emulation/block_runner.h"
#include "cuda_emulation/warp_shuffle.h"

// Blocks run one at a time, so one instance of a __shared__ variable serves
// every block in turn: a function-local static is exactly that. (Like CUDA's
// shared memory it keeps whatever the previous block left; the kernels must
// initialise it, as on a GPU.) `extern __shared__` (dynamic shared memory)
// becomes `extern static` and does not compile: not emulated.
#define __shared__ static

// A compiler barrier too: no value read from shared memory before the call
// is reused after it.
inline void __syncthreads() {
  asm volatile("" ::: "memory");
  ::entrograd::cuda_emulation::BlockBarrier(
      ::entrograd::cuda_emulation::BarrierKind::kSyncThreads);
  asm volatile("" ::: "memory");
}

inline constexpr int warpSize = 32;

// value from lane + delta of the same `width`-lane segment of the warp; a
// lane whose source lies past its segment keeps its own value, as on CUDA.
// Emulated for the whole block at once: every thread of the block must
// call it (the kernels do), with a full mask.
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta,
                   int width = warpSize) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "__shfl_down_sync emulates values of up to 8 bytes");
  namespace emu = ::entrograd::cuda_emulation;
  if (mask != 0xFFFFFFFFu) {
    emu::KernelError("__shfl_down_sync with a partial mask is not emulated");
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = emu::ShuffleDownBits(bits, delta, static_cast<unsigned>(width));
  T result;
  std::memcpy(&result, &bits, sizeof(T));
  return result;
}

namespace entrograd::cuda_emulation {
// Fibers are never preempted: a plain read-modify-write is atomic.
template <typename T>
T AtomicAdd(T* address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}
template <typename T>
T AtomicMin(T* address, T value) {
  const T old = *address;
  if (value < old) *address = value;
  return old;
}
template <typename T>
T AtomicMax(T* address, T value) {
  const T old = *address;
  if (old < value) *address = value;
  return old;
}
}  // namespace entrograd::cuda_emulation

inline int atomicAdd(int* address, int value) {
  return ::entrograd::cuda_emulation::AtomicAdd(address, value);
}
inline unsigned atomicAdd(unsigned* address, unsigned value) {
  return ::entrograd::cuda_emulation::AtomicAdd(address, value);
}
inline unsigned long long atomicAdd(unsigned long long* address,
                                    unsigned long long value) {
  return ::entrograd::cuda_emulation::AtomicAdd(address, value);
}
inline float atomicAdd(float* address, float value) {
  return ::entrograd::cuda_emulation::AtomicAdd(address, value);
}
inline double atomicAdd(double* address, double value) {
  return ::entrograd::cuda_emulation::AtomicAdd(address, value);
}
inline int atomicMin(int* address, int value) {
  return ::entrograd::cuda_emulation::AtomicMin(address, value);
}
inline unsigned atomicMin(unsigned* address, unsigned value) {
  return ::entrograd::cuda_emulation::AtomicMin(address, value);
}
inline int atomicMax(int* address, int value) {
  return ::entrograd::cuda_emulation::AtomicMax(address, value);
}
inline unsigned atomicMax(unsigned* address, unsigned value) {
  return ::entrograd::cuda_emulation::AtomicMax(address, value);
}

inline unsigned __float_as_uint(float x) {
  unsigned bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}
inline float __uint_as_float(unsigned bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}
// Round-to-nearest float operations, never contracted on a GPU. Plain IEEE
// operations here; the emulated build has -ffp-contract=off, so they stay
// apart too.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }

using std::fabs;
using std::isfinite;

// CUDA overloads min and max for every mix of integer types, returning the
// type the usual arithmetic conversions give (min(int, unsigned) is an
// unsigned min): the same here, for integers only.
template <
    typename A, typename B,
    typename = std::enable_if_t<std::is_integral_v<A> && std::is_integral_v<B>>>
constexpr std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b)
                                               : static_cast<C>(a);
}
template <
    typename A, typename B,
    typename = std::enable_if_t<std::is_integral_v<A> && std::is_integral_v<B>>>
constexpr std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b)
                                               : static_cast<C>(a);
}

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_DEVICE_BUILTINS_H_
