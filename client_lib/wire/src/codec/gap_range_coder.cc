#include "codec/gap_range_coder.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace entrograd::codec_internal {
namespace {

constexpr int kProbabilityBits = 11;
constexpr uint32_t kProbabilityOne = 1u << kProbabilityBits;
// Adaptation speed: each coded bit moves its probability 1/16 of the way
// towards what was seen. LZMA uses 1/32 over long streams; a payload holds a
// few hundred to a few thousand gaps, which a faster model learns sooner.
constexpr int kAdaptShift = 4;
constexpr uint32_t kTopValue = 1u << 24;  // renormalise below this range
constexpr int kBucketBits = 5;            // b in [0, 31]

// One probability (of a 0 bit, in units of 1/kProbabilityOne) per inner
// node of the bucket's bit tree; node 1 is the root, node n's children are
// 2n and 2n + 1.
using BucketModel = std::array<uint16_t, 1u << kBucketBits>;

BucketModel FreshModel() {
  BucketModel model;
  model.fill(kProbabilityOne / 2);
  return model;
}

int BitLengthMinusOne(uint32_t value) {  // value >= 1
  return 31 - __builtin_clz(value);
}

// Writes to *out, or with out == nullptr only counts the bytes it would
// write (to cost the encoding without building it).
class RangeEncoder {
 public:
  explicit RangeEncoder(std::string* out) : out_(out) {}

  void EncodeBit(uint16_t& probability, unsigned bit) {
    const uint32_t bound = (range_ >> kProbabilityBits) * probability;
    if (bit == 0) {
      range_ = bound;
      probability += (kProbabilityOne - probability) >> kAdaptShift;
    } else {
      low_ += bound;
      range_ -= bound;
      probability -= probability >> kAdaptShift;
    }
    Normalize();
  }

  // The low `count` bits of `bits`, most significant first, each at 1/2.
  void EncodeDirectBits(uint32_t bits, int count) {
    for (int i = count - 1; i >= 0; --i) {
      range_ >>= 1;
      if ((bits >> i) & 1u) low_ += range_;
      Normalize();
    }
  }

  void Flush() {
    for (int i = 0; i < 5; ++i) ShiftLow();
  }

  int64_t emitted() const { return emitted_; }

 private:
  void Normalize() {
    while (range_ < kTopValue) {
      range_ <<= 8;
      ShiftLow();
    }
  }

  // Emits the top byte of low_, holding back 0xFF bytes until it is known
  // whether a carry will still reach them.
  void ShiftLow() {
    if (static_cast<uint32_t>(low_) < 0xFF000000u || (low_ >> 32) != 0) {
      const auto carry = static_cast<uint8_t>(low_ >> 32);
      uint8_t pending = cache_;
      do {
        Emit(static_cast<uint8_t>(pending + carry));
        pending = 0xFF;
      } while (--cache_size_ != 0);
      cache_ = static_cast<uint8_t>(low_ >> 24);
    }
    ++cache_size_;
    low_ = (low_ & 0x00FFFFFFu) << 8;
  }

  // The very first byte is the initial cache, always 0: left out.
  void Emit(uint8_t byte) {
    if (first_byte_) {
      first_byte_ = false;
      return;
    }
    ++emitted_;
    if (out_ != nullptr) out_->push_back(static_cast<char>(byte));
  }

  std::string* out_;
  int64_t emitted_ = 0;
  uint64_t low_ = 0;
  uint32_t range_ = 0xFFFFFFFFu;
  uint8_t cache_ = 0;
  uint64_t cache_size_ = 1;
  bool first_byte_ = true;
};

// Reads what RangeEncoder wrote. Past the end of the input it reads zeros
// and remembers that it did, so the caller reports a truncation instead of
// reading out of bounds.
class RangeDecoder {
 public:
  explicit RangeDecoder(absl::string_view bytes) : bytes_(bytes) {
    for (int i = 0; i < 4; ++i) code_ = (code_ << 8) | NextByte();
  }

  unsigned DecodeBit(uint16_t& probability) {
    const uint32_t bound = (range_ >> kProbabilityBits) * probability;
    unsigned bit;
    if (code_ < bound) {
      range_ = bound;
      probability += (kProbabilityOne - probability) >> kAdaptShift;
      bit = 0;
    } else {
      code_ -= bound;
      range_ -= bound;
      probability -= probability >> kAdaptShift;
      bit = 1;
    }
    Normalize();
    return bit;
  }

  uint32_t DecodeDirectBits(int count) {
    uint32_t bits = 0;
    for (int i = 0; i < count; ++i) {
      range_ >>= 1;
      unsigned bit = 0;
      if (code_ >= range_) {
        code_ -= range_;
        bit = 1;
      }
      bits = (bits << 1) | bit;
      Normalize();
    }
    return bits;
  }

  bool overran() const { return overran_; }
  size_t consumed() const { return position_; }
  // The flush writes the encoder's low end exactly, so after the last
  // symbol of an encoder's stream the code is 0.
  uint32_t code() const { return code_; }

 private:
  void Normalize() {
    while (range_ < kTopValue) {
      range_ <<= 8;
      code_ = (code_ << 8) | NextByte();
    }
  }

  uint32_t NextByte() {
    if (position_ >= bytes_.size()) {
      overran_ = true;
      return 0;
    }
    return static_cast<uint8_t>(bytes_[position_++]);
  }

  absl::string_view bytes_;
  size_t position_ = 0;
  uint32_t code_ = 0;
  uint32_t range_ = 0xFFFFFFFFu;
  bool overran_ = false;
};

// Codes every gap of `indices` (non-empty) into `encoder` and flushes it.
void EncodeGaps(absl::Span<const uint32_t> indices, RangeEncoder& encoder) {
  BucketModel model = FreshModel();
  uint32_t next = 0;  // smallest index the next one may take
  for (uint32_t index : indices) {
    // index - next + 1 >= 1; it is at most 2^32 - 1 since numel <= 2^32 - 1.
    const uint32_t value = index - next + 1;
    const int bucket = BitLengthMinusOne(value);
    unsigned node = 1;
    for (int level = kBucketBits - 1; level >= 0; --level) {
      const unsigned bit = (static_cast<unsigned>(bucket) >> level) & 1u;
      encoder.EncodeBit(model[node], bit);
      node = (node << 1) | bit;
    }
    encoder.EncodeDirectBits(value, bucket);  // the bits below the leading 1
    next = index + 1;
  }
  encoder.Flush();
}

}  // namespace

void WriteGapRange(absl::Span<const uint32_t> indices, std::string* out) {
  out->clear();
  if (indices.empty()) return;
  // About 1 B per index at 1000x; the string grows past this if needed.
  out->reserve(indices.size() + 8);
  RangeEncoder encoder(out);
  EncodeGaps(indices, encoder);
}

int64_t GapRangeBytes(absl::Span<const uint32_t> indices) {
  if (indices.empty()) return 0;
  RangeEncoder counter(nullptr);
  EncodeGaps(indices, counter);
  return counter.emitted();
}

absl::Status ReadGapRange(uint64_t numel, uint64_t count,
                          absl::string_view bytes,
                          std::vector<uint32_t>* indices) {
  indices->clear();
  if (count == 0) {
    if (!bytes.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("index_bytes: trailing bytes: ", bytes.size(),
                       " bytes for count 0 (gap_range needs none)"));
    }
    return absl::OkStatus();
  }
  // A gap costs at least 5 bits of at best 2033/2048 each, about 0.05 bits,
  // so `bytes` can hold at most ~150 gaps a byte; reserving by the bytes
  // keeps a lying count from sizing the output.
  indices->reserve(static_cast<size_t>(
      std::min<uint64_t>(count, uint64_t{16} * bytes.size() + 16)));
  RangeDecoder decoder(bytes);
  BucketModel model = FreshModel();
  uint64_t next = 0;
  for (uint64_t j = 0; j < count; ++j) {
    unsigned node = 1;
    for (int level = 0; level < kBucketBits; ++level) {
      node = (node << 1) | decoder.DecodeBit(model[node]);
    }
    const int bucket = static_cast<int>(node - (1u << kBucketBits));
    const uint64_t value =
        (uint64_t{1} << bucket) | decoder.DecodeDirectBits(bucket);
    if (decoder.overran()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "index_bytes: truncated: ", bytes.size(),
          " gap_range bytes end before index ", j, " of count ", count));
    }
    const uint64_t index = next + value - 1;
    if (index >= numel) {
      return absl::InvalidArgumentError(absl::StrCat("index_bytes: index ",
                                                     index, " at position ", j,
                                                     " is >= numel ", numel));
    }
    indices->push_back(static_cast<uint32_t>(index));
    next = index + 1;
  }
  if (decoder.consumed() != bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index_bytes: trailing bytes: count ", count, " gap_range indices end at byte ",
        decoder.consumed(), " of ", bytes.size()));
  }
  // With every byte read and the code back at 0, these bytes are the only
  // ones the encoder writes for these indices: the decoding is canonical.
  if (decoder.code() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index_bytes: not an encoder's gap_range stream: it ends with code ",
        decoder.code(), ", not 0 (altered bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace entrograd::codec_internal
