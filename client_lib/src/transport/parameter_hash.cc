// HashParameters (client.h): FNV-1a 64 over the little-endian float32 bytes.
#include <cstdint>
#include <cstring>

#include "absl/types/span.h"
#include "entrograd/client.h"

namespace entrograd {

uint64_t HashParameters(absl::Span<const absl::Span<const float>> parameters) {
  uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a 64 offset basis
  for (absl::Span<const float> span : parameters) {
    for (float value : span) {
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof(bits));
      // Byte by byte from the least significant: the little-endian layout,
      // whatever the host's byte order.
      for (int shift = 0; shift < 32; shift += 8) {
        hash ^= (bits >> shift) & 0xFFu;
        hash *= 0x100000001B3ull;  // FNV-1a 64 prime
      }
    }
  }
  return hash;
}

}  // namespace entrograd
