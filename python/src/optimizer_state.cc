#include "python/src/optimizer_state.h"

#include <torch/extension.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "python/src/status_error.h"

namespace entrograd::python {

namespace py = pybind11;

namespace {

// The two entries that are counts (int64 scalars in the archive, ints in
// the dict); every other entry is a layer's tensor, whatever its key.
bool IsCountKey(const std::string& key) {
  return key == "step" || key == "layers";
}

}  // namespace

TemporaryFile::TemporaryFile() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "entrograd-state-XXXXXX")
          .string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const int fd = mkstemp(buffer.data());
  if (fd < 0) {
    throw StatusError(absl::InternalError(
        absl::StrCat("cannot create a temporary file like ", pattern)));
  }
  close(fd);
  path_ = buffer.data();
}

TemporaryFile::~TemporaryFile() {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

py::dict ReadStateFile(const std::string& path) {
  py::dict state;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    for (const char* required : {"step", "layers"}) {
      torch::Tensor tensor;
      if (!archive.try_read(required, tensor)) {
        ThrowInvalidArgument(absl::StrCat("optimizer state ", path,
                                          " has no \"", required, "\""));
      }
    }
    // Every entry, without knowing their names: the format is SaveState's.
    for (const std::string& key : archive.keys()) {
      torch::Tensor tensor;
      if (!archive.try_read(key, tensor)) continue;  // not a tensor
      if (IsCountKey(key)) {
        state[py::str(key)] = tensor.item<int64_t>();
      } else {
        state[py::str(key)] = tensor;
      }
    }
  } catch (const c10::Error& error) {
    ThrowInvalidArgument(
        absl::StrCat("optimizer state ", path,
                     " does not load: ", error.what_without_backtrace()));
  }
  return state;
}

void WriteStateFile(const py::dict& state, const std::string& path) {
  torch::serialize::OutputArchive archive;
  for (const auto& [py_key, value] : state) {
    if (!py::isinstance<py::str>(py_key)) {
      ThrowInvalidArgument("optimizer state keys must be strings");
    }
    const std::string key = py_key.cast<std::string>();
    if (IsCountKey(key)) {
      if (!py::isinstance<py::int_>(value)) {
        ThrowInvalidArgument(
            absl::StrCat("optimizer state \"", key, "\" must be an int"));
      }
      archive.write(key, torch::tensor(value.cast<int64_t>(), torch::kInt64));
      continue;
    }
    if (!THPVariable_Check(value.ptr())) {
      ThrowInvalidArgument(
          absl::StrCat("optimizer state \"", key, "\" must be a tensor"));
    }
    archive.write(key, value.cast<torch::Tensor>().detach().to(torch::kCPU));
  }
  for (const char* required : {"step", "layers"}) {
    if (!state.contains(required)) {
      ThrowInvalidArgument(
          absl::StrCat("optimizer state lacks \"", required,
                       "\"; pass a DistributedOptimizer.state_dict()"));
    }
  }
  try {
    archive.save_to(path);
  } catch (const c10::Error& error) {
    throw StatusError(absl::InternalError(
        absl::StrCat("writing optimizer state to ", path, ": ",
                     error.what_without_backtrace())));
  }
}

}  // namespace entrograd::python
