// Branch-free, vectorised passes shared by validation and BlockedAccumulate:
// each answers "is this whole array fine?" at several elements per
// instruction; only when the answer is no does a caller rescan to name the
// first bad position. Internal to entrograd_aggregator_merge.
//
// Written with GCC/Clang vector extensions rather than intrinsics: the
// project builds without -m flags, so these lower to SSE2 on x46-64 (NEON
// on AArch64) and need no runtime dispatch. 4 lanes: one 16-byte register
// (wider vector types would change the ABI of these helpers without AVX).
#ifndef ENTROGRAD_AGGREGATOR_MERGE_MERGE_CHECKS_H_
#define ENTROGRAD_AGGREGATOR_MERGE_MERGE_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "aggregator/merge/float_bits.h"

namespace entrograd::aggregator::merge_internal {

inline constexpr size_t kLanes = 4;
typedef uint32_t U32x4 __attribute__((vector_size(16)));
typedef int32_t I32x4 __attribute__((vector_size(16)));
typedef float F32x4 __attribute__((vector_size(16)));

// Unaligned loads and stores (memcpy of a fixed size compiles to movups).
inline U32x4 LoadU32x4(const void* p) {
  U32x4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline F32x4 LoadF32x4(const float* p) {
  F32x4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void StoreF32x4(float* p, F32x4 v) { std::memcpy(p, &v, sizeof(v)); }

// True when no value is NaN or +-Inf (exponent bits all ones), tested on
// the bits so -ffast-math cannot fold it away.
inline bool AllFinite(const float* values, size_t count) {
  const U32x4 exponent = U32x4{} + 0x7f800000u;
  I32x4 bad = {};
  size_t j = 0;
  for (; j + kLanes <= count; j += kLanes) {
    bad |= (LoadU32x4(values + j) & exponent) == exponent;
  }
  uint32_t tail = 0;
  for (; j < count; ++j) tail |= static_cast<uint32_t>(IsNonFinite(values[j]));
  for (size_t lane = 0; lane < kLanes; ++lane) tail |= static_cast<uint32_t>(bad[lane]);
  return tail == 0;
}

// True when indices[0] < indices[1] < ... < indices[count - 1] (vacuously
// for count < 2). Compares each element with its successor, 4 pairs at a
// time; the unsigned compare is done on signed lanes with the sign bit
// flipped, as SSE2 has only signed compares.
inline bool StrictlyAscending(const uint32_t* indices, size_t count) {
  if (count < 2) return true;
  const I32x4 flip = I32x4{} + INT32_MIN;
  I32x4 bad = {};
  size_t j = 0;
  for (; j + kLanes < count; j += kLanes) {
    const I32x4 current = (I32x4)LoadU32x4(indices + j) ^ flip;
    const I32x4 next = (I32x4)LoadU32x4(indices + j + 1) ^ flip;
    bad |= next <= current;
  }
  uint32_t tail = 0;
  for (; j + 1 < count; ++j) {
    tail |= static_cast<uint32_t>(indices[j + 1] <= indices[j]);
  }
  for (size_t lane = 0; lane < kLanes; ++lane) tail |= static_cast<uint32_t>(bad[lane]);
  return tail == 0;
}

// values[j] /= divisor for every j, returning true when every quotient is
// finite. IEEE division is correctly rounded lane by lane, so the bits equal
// those of the scalar loop.
inline bool DivideAllFinite(float* values, size_t count, float divisor) {
  const U32x4 exponent = U32x4{} + 0x7f800000u;
  I32x4 bad = {};
  size_t j = 0;
  for (; j + kLanes <= count; j += kLanes) {
    const F32x4 quotient = LoadF32x4(values + j) / divisor;
    StoreF32x4(values + j, quotient);
    bad |= ((U32x4)quotient & exponent) == exponent;
  }
  uint32_t tail = 0;
  for (; j < count; ++j) {
    values[j] /= divisor;
    tail |= static_cast<uint32_t>(IsNonFinite(values[j]));
  }
  for (size_t lane = 0; lane < kLanes; ++lane) tail |= static_cast<uint32_t>(bad[lane]);
  return tail == 0;
}

}  // namespace entrograd::aggregator::merge_internal

#endif  // ENTROGRAD_AGGREGATOR_MERGE_MERGE_CHECKS_H_
