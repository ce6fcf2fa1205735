// ReadIdxFile: the header is validated before the payload is sized, and the
// payload is read in chunks, so a corrupt or hostile header cannot make us
// allocate much more than the bytes the file really holds.

#include "workers/fashion_mnist/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "entrograd/common/status_macros.h"

namespace entrograd::workers {
namespace {

// gzread takes an unsigned length and returns an int, so reads are bounded.
constexpr uint64_t kReadChunkBytes = uint64_t{1} << 20;

struct GzCloser {
  void operator()(gzFile file) const { gzclose(file); }
};
using GzFilePtr = std::unique_ptr<gzFile_s, GzCloser>;

// zlib's description of the last error on `file`, without the path zlib
// prefixes (our messages already start with it); "" when there is none.
std::string GzErrorText(gzFile file, const std::string& path) {
  int code = Z_OK;
  const char* text = gzerror(file, &code);
  if (code == Z_OK || text == nullptr || *text == '\0') return "";
  absl::string_view message = text;
  absl::ConsumePrefix(&message, absl::StrCat(path, ": "));
  return absl::StrCat(" (zlib: ", message, ")");
}

// Reads up to `size` bytes into `out`; sets *got to the number read. Fails
// only on a read error (a corrupt gzip stream), not on a short read.
absl::Status ReadSome(gzFile file, const std::string& path, uint8_t* out,
                      uint64_t size, uint64_t* got) {
  *got = 0;
  while (*got < size) {
    const unsigned want =
        static_cast<unsigned>(std::min(size - *got, kReadChunkBytes));
    const int n = gzread(file, out + *got, want);
    if (n < 0) {
      return absl::DataLossError(
          absl::StrCat(path, ": read failed", GzErrorText(file, path)));
    }
    if (n == 0) break;  // End of file.
    *got += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ReadExactly(gzFile file, const std::string& path, const char* what,
                         uint8_t* out, uint64_t size) {
  uint64_t got = 0;
  ENTROGRAD_RETURN_IF_ERROR(ReadSome(file, path, out, size, &got));
  if (got != size) {
    // A gzip stream cut short reads as a short read plus a zlib error.
    return absl::DataLossError(absl::StrCat(path, ": truncated ", what, ": ",
                                            got, " of ", size, " bytes",
                                            GzErrorText(file, path)));
  }
  return absl::OkStatus();
}

uint32_t BigEndian32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) |
         (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
}

absl::StatusOr<GzFilePtr> Open(const std::string& path) {
  errno = 0;
  gzFile raw = gzopen(path.c_str(), "rb");
  if (raw == nullptr) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return absl::UnavailableError(absl::StrCat(
        path,
        ": cannot open: ", error != 0 ? std::strerror(error) : "zlib error"));
  }
  GzFilePtr file(raw);
  // Larger than zlib's 8 KiB default: the image files are tens of MB.
  gzbuffer(file.get(), 1 << 18);
  return file;
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path,
                                     int expected_rank) {
  if (expected_rank < 1 || expected_rank > 255) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected_rank ", expected_rank, " outside [1, 255]"));
  }
  ENTROGRAD_ASSIGN_OR_RETURN(GzFilePtr file, Open(path));

  uint8_t magic_bytes[4];
  ENTROGRAD_RETURN_IF_ERROR(
      ReadExactly(file.get(), path, "header", magic_bytes, 4));
  const uint32_t magic = BigEndian32(magic_bytes);
  const uint32_t expected_magic =
      (kIdxUint8Type << 8) | static_cast<uint32_t>(expected_rank);
  if (magic != expected_magic) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": bad magic 0x", absl::Hex(magic, absl::kZeroPad8),
        ", expected 0x", absl::Hex(expected_magic, absl::kZeroPad8),
        " (IDX uint8 with ", expected_rank, " dimension",
        expected_rank == 1 ? "" : "s", ")"));
  }

  std::vector<uint8_t> dim_bytes(4 * static_cast<size_t>(expected_rank));
  ENTROGRAD_RETURN_IF_ERROR(ReadExactly(file.get(), path, "header",
                                        dim_bytes.data(), dim_bytes.size()));
  IdxArray array;
  uint64_t total = 1;
  for (int i = 0; i < expected_rank; ++i) {
    const uint32_t dim = BigEndian32(&dim_bytes[4 * static_cast<size_t>(i)]);
    array.dims.push_back(dim);
    // Checked per factor: with each factor < 2^32 and total <= 2^30 before
    // the multiply, the product cannot overflow 64 bits.
    total *= dim;
    if (total > kMaxIdxBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": dimensions describe more than kMaxIdxBytes (",
                       kMaxIdxBytes, ") bytes"));
    }
  }

  // Grown as bytes arrive rather than sized from the header, so a header
  // that promises more than the file holds costs at most one chunk extra.
  uint64_t got = 0;
  while (got < total) {
    const uint64_t chunk = std::min(total - got, kReadChunkBytes);
    array.data.resize(got + chunk);
    uint64_t n = 0;
    ENTROGRAD_RETURN_IF_ERROR(
        ReadSome(file.get(), path, array.data.data() + got, chunk, &n));
    got += n;
    if (n < chunk) {
      return absl::DataLossError(absl::StrCat(path, ": truncated data: ", got,
                                              " of ", total, " bytes",
                                              GzErrorText(file.get(), path)));
    }
  }

  uint8_t extra;
  uint64_t extra_got = 0;
  ENTROGRAD_RETURN_IF_ERROR(ReadSome(file.get(), path, &extra, 1, &extra_got));
  if (extra_got != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": trailing bytes after the ", total, "-byte payload"));
  }
  return array;
}

}  // namespace entrograd::workers
