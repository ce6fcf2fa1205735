// Reads IDX files (the format of MNIST and Fashion-MNIST), gzipped or plain.
// Only the unsigned-byte element type (0x08) is supported: it is all the
// datasets we train on use.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_IDX_READER_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_IDX_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace entrograd::workers {

// Magic numbers: two zero bytes, the element type (0x08 = uint8) and the
// number of dimensions.
inline constexpr uint32_t kIdxUint8Type = 0x08;
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // [N]
inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // [N, rows, cols]

// Largest payload ReadIdxFile accepts (1 GiB). Bounds what a corrupt header
// can make us allocate; Fashion-MNIST's largest file holds 47 MB.
inline constexpr uint64_t kMaxIdxBytes = uint64_t{1} << 30;

// The contents of an IDX file: its dimensions (outermost first) and its
// elements in row-major order, data.size() == product of dims.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

// Reads the IDX file at `path`, which may be gzipped or plain (zlib reads
// both), and checks that it holds uint8 elements in `expected_rank`
// dimensions, i.e. that its magic is 0x00000800 | expected_rank.
//
// Errors, each naming `path`:
//   NotFound         the file does not exist.
//   InvalidArgument  expected_rank outside [1, 255]; the magic is not the
//                    expected one (other element type or number of
//                    dimensions, or not an IDX file at all); the payload
//                    would exceed kMaxIdxBytes; bytes follow the payload.
//   DataLoss         the header or payload is truncated, or the gzip stream
//                    is corrupt.
//   Unavailable      the file exists but cannot be opened or read.
// Thread-safe: shares no state between calls.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path,
                                     int expected_rank);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_IDX_READER_H_
