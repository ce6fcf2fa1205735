// The IEEE bit pattern of a float and back: tests compare floats bitwise
// (determinism, conservation, -0.0) rather than by value.
#ifndef ENTROGRAD_TESTS_SUPPORT_FLOAT_BITS_H_
#define ENTROGRAD_TESTS_SUPPORT_FLOAT_BITS_H_

#include <cstdint>
#include <cstring>

namespace entrograd::testing {

inline uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_SUPPORT_FLOAT_BITS_H_
