// libFuzzer harness: an untrusted .npy (or raw .f32) file through
// entrograd-cli's reader, ReadArrayFile, as a user's file would go: the
// bytes are written to an in-memory file, read through a symlink named
// .npy (the reader picks the format by extension). It must return a value
// or an error, never crash or read out of bounds.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "entrograd_cli/array_file_reader.h"
#include "entrograd_cli/npy_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The header parsers alone, on every input.
  auto preamble = entrograd::cli::ParseNpyPreamble(bytes);
  if (preamble.ok() && preamble->header_offset <= size) {
    entrograd::cli::ParseNpyHeaderDict(bytes.substr(preamble->header_offset))
        .IgnoreError();
  }
  // The whole reader, through a file.
  static const int fd = memfd_create("fuzz.npy", 0);
  static const std::string path = [] {
    std::string link = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                       std::string("/entrograd_npy_fuzz_") +
                       std::to_string(getpid()) + ".npy";
    unlink(link.c_str());
    if (symlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link.c_str()) != 0) {
      return std::string();
    }
    static std::string to_remove = link;
    std::atexit([] { unlink(to_remove.c_str()); });
    return link;
  }();
  if (fd < 0 || path.empty()) return 0;
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    return 0;
  }
  entrograd::cli::ReadArrayFile(path).IgnoreError();
  return 0;
}
