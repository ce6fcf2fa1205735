// Magnitude keys: the IEEE bit pattern of |x|. For finite floats the order of
// keys as unsigned integers is the order of magnitudes, which lets selection
// bucket and compare integers. Private to the compression core.
#ifndef ENTROGRAD_CORE_MAGNITUDE_KEY_H_
#define ENTROGRAD_CORE_MAGNITUDE_KEY_H_

#include <cstdint>
#include <cstring>

namespace entrograd {

inline uint32_t MagnitudeKey(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits & 0x7FFFFFFFu;  // drop the sign: -0.0 and +0.0 share key 0
}

// Keys at or above this are Inf or NaN.
inline constexpr uint32_t kNonFiniteKey = 0x7F800000u;

// The histogram uses the top 16 bits of the 31-bit key: 8 exponent bits and
// 7 mantissa bits, so one bucket spans 1/128 of an octave.
inline constexpr int kBucketShift = 15;
inline constexpr uint32_t kHistogramBuckets = 1u << 16;
inline constexpr uint32_t kFirstNonFiniteBucket = kNonFiniteKey >> kBucketShift;

inline uint32_t BucketOf(uint32_t key) { return key >> kBucketShift; }

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_MAGNITUDE_KEY_H_
