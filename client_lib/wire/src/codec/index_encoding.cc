#include "codec/index_encoding.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/gap_range_coder.h"
#include "codec/little_endian.h"
#include "entrograd/codec.h"

namespace entrograd {
namespace codec_internal {
namespace {

uint64_t BitmapBytes(uint64_t numel) { return (numel + 7) / 8; }

// GCC/Clang builtins (the project's compilers); C++17 has no <bit>.
unsigned LowestSetBit(unsigned value) {
  return static_cast<unsigned>(__builtin_ctz(value));
}
unsigned PopCount(unsigned value) {
  return static_cast<unsigned>(__builtin_popcount(value));
}

// "truncated" or "trailing bytes" when `have` differs from the `need` the
// header implies.
absl::Status CheckExactSize(IndexEncoding encoding, uint64_t have,
                            uint64_t need, absl::string_view why) {
  if (have == need) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "index_bytes: ", have < need ? "truncated" : "trailing bytes", ": ", have,
      " bytes, ", IndexEncodingName(encoding), " needs ", need, " ", why));
}

void WriteRawU32(absl::Span<const uint32_t> indices, std::string* out) {
  out->resize(indices.size() * 4);
  char* p = out->data();
  for (uint32_t index : indices) {
    StoreLe32(index, p);
    p += 4;
  }
}

void WriteDeltaVarint(absl::Span<const uint32_t> indices, std::string* out) {
  out->resize(static_cast<size_t>(DeltaVarintBytes(indices)));
  auto* p = reinterpret_cast<unsigned char*>(out->data());
  uint32_t next = 0;  // smallest index the next one may take
  for (uint32_t index : indices) {
    uint32_t gap = index - next;
    while (gap >= 0x80) {
      *p++ = static_cast<unsigned char>(gap | 0x80);
      gap >>= 7;
    }
    *p++ = static_cast<unsigned char>(gap);
    next = index + 1;  // wraps only after the last possible index
  }
}

void WriteBitmap(uint64_t numel, absl::Span<const uint32_t> indices,
                 std::string* out) {
  out->assign(static_cast<size_t>(BitmapBytes(numel)), '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(out->data());
  for (uint32_t index : indices) {
    bytes[index >> 3] |= static_cast<unsigned char>(1u << (index & 7));
  }
}

absl::Status ReadRawU32(uint64_t numel, uint64_t count, absl::string_view bytes,
                        std::vector<uint32_t>* indices) {
  if (auto status =
          CheckExactSize(IndexEncoding::kRawU32, bytes.size(), count * 4,
                         absl::StrCat("for count ", count));
      !status.ok()) {
    return status;
  }
  indices->resize(count);
  const char* p = bytes.data();
  for (uint64_t j = 0; j < count; ++j, p += 4) {
    const uint32_t index = LoadLe32(p);
    if (index >= numel) {
      return absl::InvalidArgumentError(absl::StrCat("index_bytes: index ",
                                                     index, " at position ", j,
                                                     " is >= numel ", numel));
    }
    if (j > 0 && index <= (*indices)[j - 1]) {
      const uint32_t previous = (*indices)[j - 1];
      return absl::InvalidArgumentError(
          absl::StrCat("index_bytes: index ", index, " at position ", j,
                       " is not greater than previous index ", previous,
                       index == previous ? " (repeated)" : " (descending)"));
    }
    (*indices)[j] = index;
  }
  return absl::OkStatus();
}

absl::Status ReadDeltaVarint(uint64_t numel, uint64_t count,
                             absl::string_view bytes,
                             std::vector<uint32_t>* indices) {
  // Every varint takes 1 to 5 bytes, so the size bounds count both ways;
  // checking it first keeps a lying count from sizing the output.
  if (bytes.size() < count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index_bytes: truncated: ", bytes.size(), " bytes cannot hold ", count,
        " delta_varint indices (at least 1 byte each)"));
  }
  if (bytes.size() > count * 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index_bytes: trailing bytes: ", bytes.size(), " bytes are more than ",
        count, " delta_varint indices can take (at most 5 bytes each)"));
  }
  indices->resize(count);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto* end = p + bytes.size();
  uint64_t next = 0;  // smallest index the next one may take
  uint64_t j = 0;
  while (p < end) {
    if (j == count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "count: ", count, " but index_bytes holds more than ", count,
          " varints (trailing bytes at byte offset ",
          p - reinterpret_cast<const unsigned char*>(bytes.data()), ")"));
    }
    // Non-minimal varints (e.g. 0x80 0x00) are accepted, as protobuf does;
    // the encoder never writes them.
    uint64_t gap = 0;
    int shift = 0;
    for (;;) {
      if (p == end) {
        return absl::InvalidArgumentError(
            absl::StrCat("index_bytes: truncated varint at position ", j));
      }
      const unsigned char byte = *p++;
      if (shift == 28) {
        if (byte & 0x80) {
          return absl::InvalidArgumentError(
              absl::StrCat("index_bytes: varint at position ", j,
                           " is longer than 5 bytes"));
        }
        if (byte > 0x0F) {
          return absl::InvalidArgumentError(absl::StrCat(
              "index_bytes: varint at position ", j, " overflows uint32"));
        }
      }
      gap |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) break;
      shift += 7;
    }
    const uint64_t index = next + gap;
    if (index >= numel) {
      return absl::InvalidArgumentError(absl::StrCat("index_bytes: index ",
                                                     index, " at position ", j,
                                                     " is >= numel ", numel));
    }
    (*indices)[j++] = static_cast<uint32_t>(index);
    next = index + 1;
  }
  if (j != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "count: ", count, " but index_bytes holds ", j, " varints"));
  }
  return absl::OkStatus();
}

absl::Status ReadBitmap(uint64_t numel, uint64_t count, absl::string_view bytes,
                        std::vector<uint32_t>* indices) {
  if (auto status =
          CheckExactSize(IndexEncoding::kBitmap, bytes.size(),
                         BitmapBytes(numel), absl::StrCat("for numel ", numel));
      !status.ok()) {
    return status;
  }
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t size = bytes.size();
  // Padding bits of the last byte stand for indices >= numel.
  const unsigned tail_bits = static_cast<unsigned>(numel & 7);
  if (tail_bits != 0) {
    const unsigned padding = data[size - 1] >> tail_bits;
    if (padding != 0) {
      const uint64_t index = (size - 1) * 8 + tail_bits + LowestSetBit(padding);
      return absl::InvalidArgumentError(
          absl::StrCat("index_bytes: bitmap bit ", index,
                       " is set, an index >= numel ", numel));
    }
  }
  // Count first so a wrong count is reported before the output is sized.
  uint64_t set_bits = 0;
  for (size_t i = 0; i < size; ++i) set_bits += PopCount(data[i]);
  if (set_bits != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("count: ", count, " but the index_bytes bitmap has ",
                     set_bits, " bits set"));
  }
  indices->resize(count);
  uint32_t* out = indices->data();
  for (size_t i = 0; i < size; ++i) {
    unsigned byte = data[i];
    while (byte != 0) {
      *out++ = static_cast<uint32_t>(i * 8 + LowestSetBit(byte));
      byte &= byte - 1;
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t DeltaVarintBytes(absl::Span<const uint32_t> indices) {
  int64_t bytes = 0;
  uint32_t next = 0;
  for (uint32_t index : indices) {
    bytes += VarintBytes(index - next);
    next = index + 1;
  }
  return bytes;
}

std::optional<int64_t> IndexBytesFor(IndexEncoding encoding,
                                     const SparseShape& shape) {
  switch (encoding) {
    case IndexEncoding::kRawU32:
      return static_cast<int64_t>(shape.count * 4);
    case IndexEncoding::kDeltaVarint:
      return shape.delta_varint_bytes;
    case IndexEncoding::kBitmap:
      return static_cast<int64_t>(BitmapBytes(shape.numel));
    case IndexEncoding::kDense:
      return 0;
    case IndexEncoding::kGapRange:
      return shape.gap_range_bytes;
  }
  return std::nullopt;
}

void WriteIndices(IndexEncoding encoding, uint64_t numel,
                  absl::Span<const uint32_t> indices, std::string* out) {
  switch (encoding) {
    case IndexEncoding::kRawU32:
      WriteRawU32(indices, out);
      return;
    case IndexEncoding::kDeltaVarint:
      WriteDeltaVarint(indices, out);
      return;
    case IndexEncoding::kBitmap:
      WriteBitmap(numel, indices, out);
      return;
    case IndexEncoding::kDense:
      out->clear();
      return;
    case IndexEncoding::kGapRange:
      WriteGapRange(indices, out);
      return;
  }
}

absl::Status ReadIndices(IndexEncoding encoding, uint64_t numel, uint64_t count,
                         absl::string_view bytes,
                         std::vector<uint32_t>* indices) {
  switch (encoding) {
    case IndexEncoding::kRawU32:
      return ReadRawU32(numel, count, bytes, indices);
    case IndexEncoding::kDeltaVarint:
      return ReadDeltaVarint(numel, count, bytes, indices);
    case IndexEncoding::kBitmap:
      return ReadBitmap(numel, count, bytes, indices);
    case IndexEncoding::kGapRange:
      return ReadGapRange(numel, count, bytes, indices);
    case IndexEncoding::kDense:
      break;
  }
  return absl::InternalError("index_bytes: ReadIndices called for dense");
}

}  // namespace codec_internal

int64_t IndexBytes(IndexEncoding encoding, uint64_t numel,
                   absl::Span<const uint32_t> indices) {
  codec_internal::SparseShape shape;
  shape.numel = numel;
  shape.count = indices.size();
  if (encoding == IndexEncoding::kDeltaVarint) {
    shape.delta_varint_bytes = codec_internal::DeltaVarintBytes(indices);
  }
  if (encoding == IndexEncoding::kGapRange) {
    shape.gap_range_bytes = codec_internal::GapRangeBytes(indices);
  }
  return codec_internal::IndexBytesFor(encoding, shape).value_or(0);
}

}  // namespace entrograd
