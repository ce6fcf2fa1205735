#include "entrograd_cli/array_file_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "entrograd/common/status_macros.h"
#include "entrograd_cli/npy_header.h"

namespace entrograd::cli {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

struct OpenFile {
  FilePtr file;
  uint64_t size = 0;
};

absl::StatusOr<OpenFile> Open(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status =
      std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    return absl::NotFoundError("no such file");
  }
  if (error) {
    return absl::Status(absl::ErrnoToStatusCode(error.value()),
                        absl::StrCat("cannot access: ", error.message()));
  }
  // A directory or a FIFO has no size to check the data against.
  if (status.type() != std::filesystem::file_type::regular) {
    return absl::FailedPreconditionError("not a regular file");
  }
  OpenFile opened;
  opened.file.reset(std::fopen(path.c_str(), "rb"));
  if (opened.file == nullptr) {
    return absl::ErrnoToStatus(errno, "cannot open");
  }
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) {
    return absl::Status(absl::ErrnoToStatusCode(error.value()),
                        absl::StrCat("cannot get the size: ", error.message()));
  }
  opened.size = static_cast<uint64_t>(size);
  return opened;
}

absl::Status ReadExactly(std::FILE* file, void* destination, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (std::fread(destination, 1, bytes, file) == bytes) return absl::OkStatus();
  if (std::ferror(file)) return absl::ErrnoToStatus(errno, "read failed");
  return absl::DataLossError(
      "the file ended early (did it change while being "
      "read?)");
}

bool HostIsLittleEndian() {
  const uint32_t one = 1;
  unsigned char first_byte;
  std::memcpy(&first_byte, &one, 1);
  return first_byte == 1;
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// "big-endian float32", "little-endian int64", "object", ... for the dtype
// strings NumPy writes ([byte order][kind][item size]).
std::string DescribeDtype(absl::string_view descr) {
  absl::string_view rest = descr;
  std::string order;
  if (!rest.empty()) {
    switch (rest[0]) {
      case '<':
        order = "little-endian ";
        rest.remove_prefix(1);
        break;
      case '>':
        order = "big-endian ";
        rest.remove_prefix(1);
        break;
      case '=':
        order = "native-order ";
        rest.remove_prefix(1);
        break;
      case '|':
        rest.remove_prefix(1);
        break;
      default:
        break;
    }
  }
  if (rest.empty()) return "an empty dtype";
  const char kind = rest[0];
  rest.remove_prefix(1);
  int item_bytes = 0;
  const bool sized =
      absl::SimpleAtoi(rest, &item_bytes) && item_bytes > 0 && item_bytes <= 64;
  const std::string bits = sized ? absl::StrCat(item_bytes * 8) : "";
  switch (kind) {
    case 'f':
      return absl::StrCat(order, "float", bits);
    case 'i':
      return absl::StrCat(order, "int", bits);
    case 'u':
      return absl::StrCat(order, "uint", bits);
    case 'c':
      return absl::StrCat(order, "complex", bits);
    case 'b':
    case '?':
      return "bool";
    case 'O':
      return "object array (pickled Python objects)";
    case 'U':
      return "unicode string";
    case 'S':
    case 'a':
      return "byte string";
    case 'V':
      return "raw void";
    case 'M':
      return "datetime";
    case 'm':
      return "timedelta";
    default:
      return "an unknown dtype";
  }
}

absl::Status CheckFloat32COrder(const NpyHeader& header) {
  if (header.descr != "<f4") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported dtype '", header.descr, "' (", DescribeDtype(header.descr),
        "); expected '<f4' (little-endian float32)"));
  }
  if (header.fortran_order) {
    return absl::InvalidArgumentError(
        "fortran_order is True; only C-order arrays are supported (save "
        "np.ascontiguousarray(x))");
  }
  return absl::OkStatus();
}

// The number of elements of `shape`, refusing none and more than a layer may
// have. Overflow-safe: stops multiplying once the limit is passed.
absl::StatusOr<uint64_t> ElementCount(const std::vector<uint64_t>& shape) {
  for (uint64_t dimension : shape) {
    if (dimension == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "empty array: shape ", ShapeString(shape), " has no elements"));
    }
  }
  uint64_t count = 1;
  for (uint64_t dimension : shape) {
    if (dimension > kMaxArrayElements / count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "too many elements: shape ", ShapeString(shape), " has more than ",
          kMaxArrayElements, ", the most a layer may have"));
    }
    count *= dimension;
  }
  return count;
}

absl::Status CheckFinite(const std::vector<float>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("holds a non-finite value (", values[i], ") at element ",
                       i, " (flat index, C order)"));
    }
  }
  return absl::OkStatus();
}

// Reads `count` float32 from the current position, which must be exactly the
// remaining `available` bytes of the file.
absl::StatusOr<std::vector<float>> ReadFloat32Data(std::FILE* file,
                                                   uint64_t count,
                                                   uint64_t available,
                                                   absl::string_view what) {
  const uint64_t needed = count * sizeof(float);
  if (available < needed) {
    return absl::DataLossError(absl::StrCat(
        "truncated data: ", what, " needs ", count, " elements (", needed,
        " bytes) but only ", available, " bytes follow the header"));
  }
  if (available > needed) {
    return absl::InvalidArgumentError(
        absl::StrCat(available - needed, " unexpected bytes after the ", count,
                     " elements of ", what));
  }
  std::vector<float> values(count);
  ENTROGRAD_RETURN_IF_ERROR(ReadExactly(file, values.data(), needed));
  if (!HostIsLittleEndian()) {
    for (float& value : values) {
      unsigned char bytes[sizeof(float)];
      std::memcpy(bytes, &value, sizeof(float));
      std::swap(bytes[0], bytes[3]);
      std::swap(bytes[1], bytes[2]);
      std::memcpy(&value, bytes, sizeof(float));
    }
  }
  ENTROGRAD_RETURN_IF_ERROR(CheckFinite(values));
  return values;
}

absl::StatusOr<std::vector<float>> ReadNpy(OpenFile& opened) {
  std::string preamble_bytes(
      std::min<uint64_t>(opened.size, kNpyMaxPreambleBytes), '\0');
  ENTROGRAD_RETURN_IF_ERROR(ReadExactly(
      opened.file.get(), preamble_bytes.data(), preamble_bytes.size()));
  ENTROGRAD_ASSIGN_OR_RETURN(NpyPreamble preamble,
                             ParseNpyPreamble(preamble_bytes));
  const uint64_t data_offset = preamble.header_offset + preamble.header_length;
  if (data_offset > opened.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad npy header: the header is ", preamble.header_length,
        " bytes long but the file ends after ", opened.size, " bytes"));
  }
  std::string dict(preamble.header_length, '\0');
  if (std::fseek(opened.file.get(), static_cast<long>(preamble.header_offset),
                 SEEK_SET) != 0) {
    return absl::ErrnoToStatus(errno, "seek failed");
  }
  ENTROGRAD_RETURN_IF_ERROR(
      ReadExactly(opened.file.get(), dict.data(), dict.size()));
  ENTROGRAD_ASSIGN_OR_RETURN(NpyHeader header, ParseNpyHeaderDict(dict));
  ENTROGRAD_RETURN_IF_ERROR(CheckFloat32COrder(header));
  ENTROGRAD_ASSIGN_OR_RETURN(uint64_t count, ElementCount(header.shape));
  return ReadFloat32Data(opened.file.get(), count, opened.size - data_offset,
                         absl::StrCat("shape ", ShapeString(header.shape)));
}

absl::StatusOr<std::vector<float>> ReadRawF32(OpenFile& opened) {
  if (opened.size == 0) {
    return absl::InvalidArgumentError("empty file: no elements");
  }
  if (opened.size % sizeof(float) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size ", opened.size, " bytes is not a multiple of 4 (raw float32)"));
  }
  const uint64_t count = opened.size / sizeof(float);
  if (count > kMaxArrayElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("too many elements: ", count, " is more than ",
                     kMaxArrayElements, ", the most a layer may have"));
  }
  return ReadFloat32Data(opened.file.get(), count, opened.size,
                         "the raw float32 file");
}

absl::StatusOr<std::vector<float>> ReadWithoutPath(const std::string& path) {
  const std::string extension =
      absl::AsciiStrToLower(std::filesystem::path(path).extension().string());
  if (extension != ".npy" && extension != ".f32") {
    return absl::InvalidArgumentError(absl::StrCat(
        extension.empty()
            ? "no file extension"
            : absl::StrCat("unsupported file extension '", extension, "'"),
        "; expected .npy (NumPy float32) or .f32 (raw little-endian float32)"));
  }
  ENTROGRAD_ASSIGN_OR_RETURN(OpenFile opened, Open(path));
  if (extension == ".npy") return ReadNpy(opened);
  return ReadRawF32(opened);
}

}  // namespace

absl::StatusOr<std::vector<float>> ReadArrayFile(const std::string& path) {
  absl::StatusOr<std::vector<float>> values = ReadWithoutPath(path);
  if (!values.ok()) {
    return absl::Status(values.status().code(),
                        absl::StrCat(path, ": ", values.status().message()));
  }
  return values;
}

std::string BaseName(absl::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == absl::string_view::npos ? path
                                                      : path.substr(slash + 1));
}

}  // namespace entrograd::cli
