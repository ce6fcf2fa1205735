// Little-endian loads and stores of 16- and 32-bit words at unaligned byte
// addresses. Written with shifts rather than memcpy so the wire format does
// not depend on the host's byte order; compilers fold these into single
// moves on little-endian targets.
#ifndef ENTROGRAD_CODEC_LITTLE_ENDIAN_H_
#define ENTROGRAD_CODEC_LITTLE_ENDIAN_H_

#include <cstdint>

namespace entrograd::codec_internal {

inline void StoreLe16(uint16_t value, char* out) {
  out[0] = static_cast<char>(value & 0xFF);
  out[1] = static_cast<char>(value >> 8);
}

inline void StoreLe32(uint32_t value, char* out) {
  out[0] = static_cast<char>(value & 0xFF);
  out[1] = static_cast<char>((value >> 8) & 0xFF);
  out[2] = static_cast<char>((value >> 16) & 0xFF);
  out[3] = static_cast<char>(value >> 24);
}

inline uint16_t LoadLe16(const char* in) {
  const auto* b = reinterpret_cast<const unsigned char*>(in);
  return static_cast<uint16_t>(b[0] | (b[1] << 8));
}

inline uint32_t LoadLe32(const char* in) {
  const auto* b = reinterpret_cast<const unsigned char*>(in);
  return static_cast<uint32_t>(b[0]) | (static_cast<uint32_t>(b[1]) << 8) |
         (static_cast<uint32_t>(b[2]) << 16) |
         (static_cast<uint32_t>(b[3]) << 24);
}

}  // namespace entrograd::codec_internal

#endif  // ENTROGRAD_CODEC_LITTLE_ENDIAN_H_
