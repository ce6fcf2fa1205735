#include "python/src/module_archive.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/extension.h>
#include <torch/serialize.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "python/src/bindings.h"
#include "python/src/status_error.h"

namespace entrograd::python {

namespace py = pybind11;

namespace {

// A module as the archive nests it: its own tensors and its submodules.
struct ArchiveNode {
  struct Entry {
    torch::Tensor tensor;
    bool is_buffer = false;
    std::string full_name;
  };
  std::map<std::string, Entry> tensors;
  std::map<std::string, std::unique_ptr<ArchiveNode>> children;
};

void AddTensors(ArchiveNode& root, const NamedTensors& named, bool is_buffer) {
  for (const auto& [name, tensor] : named) {
    std::vector<std::string> parts = absl::StrSplit(name, '.');
    ArchiveNode* node = &root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      std::unique_ptr<ArchiveNode>& child = node->children[parts[i]];
      if (child == nullptr) child = std::make_unique<ArchiveNode>();
      node = child.get();
    }
    const std::string& leaf = parts.back();
    if (leaf.empty() || node->tensors.count(leaf) > 0) {
      ThrowInvalidArgument(
          absl::StrCat("tensor name \"", name, "\" is empty or given twice"));
    }
    node->tensors[leaf] = {tensor, is_buffer, name};
  }
}

// A name both a tensor and a submodule cannot be written.
void CheckNoClash(const ArchiveNode& node) {
  for (const auto& [key, child] : node.children) {
    if (node.tensors.count(key) > 0) {
      ThrowInvalidArgument(absl::StrCat("\"", node.tensors.at(key).full_name,
                                        "\" is both a tensor and a submodule"));
    }
    CheckNoClash(*child);
  }
}

void Write(const ArchiveNode& node, torch::serialize::OutputArchive& archive) {
  for (const auto& [key, entry] : node.tensors) {
    archive.write(key, entry.tensor.detach().to(torch::kCPU), entry.is_buffer);
  }
  for (const auto& [key, child] : node.children) {
    torch::serialize::OutputArchive child_archive;
    Write(*child, child_archive);
    archive.write(key, child_archive);
  }
}

void Read(const ArchiveNode& node, torch::serialize::InputArchive& archive) {
  for (const auto& [key, entry] : node.tensors) {
    torch::Tensor read;
    if (!archive.try_read(key, read, entry.is_buffer)) {
      ThrowInvalidArgument(
          absl::StrCat("the archive has no \"", entry.full_name, "\""));
    }
    if (read.sizes() != entry.tensor.sizes()) {
      ThrowInvalidArgument(absl::StrCat(
          "\"", entry.full_name, "\" has shape ", c10::str(read.sizes()),
          " in the archive; the module's is ", c10::str(entry.tensor.sizes())));
    }
    torch::NoGradGuard no_grad;
    entry.tensor.copy_(read);
  }
  for (const auto& [key, child] : node.children) {
    torch::serialize::InputArchive child_archive;
    if (!archive.try_read(key, child_archive)) {
      ThrowInvalidArgument(
          absl::StrCat("the archive has no submodule \"", key, "\""));
    }
    Read(*child, child_archive);
  }
}

ArchiveNode TreeOf(const NamedTensors& parameters,
                   const NamedTensors& buffers) {
  ArchiveNode root;
  AddTensors(root, parameters, /*is_buffer=*/false);
  AddTensors(root, buffers, /*is_buffer=*/true);
  CheckNoClash(root);
  return root;
}

}  // namespace

void SaveModuleArchive(const std::string& path, const NamedTensors& parameters,
                       const NamedTensors& buffers) {
  const ArchiveNode root = TreeOf(parameters, buffers);
  try {
    torch::serialize::OutputArchive archive;
    Write(root, archive);
    archive.save_to(path);
  } catch (const c10::Error& error) {
    throw StatusError(absl::InternalError(
        absl::StrCat("writing ", path, ": ", error.what_without_backtrace())));
  }
}

void LoadModuleArchive(const std::string& path, const NamedTensors& parameters,
                       const NamedTensors& buffers) {
  const ArchiveNode root = TreeOf(parameters, buffers);
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    Read(root, archive);
  } catch (const c10::Error& error) {
    ThrowInvalidArgument(
        absl::StrCat(path, " does not load as a LibTorch module archive: ",
                     error.what_without_backtrace()));
  }
}

void RegisterModuleArchive(py::module_& module) {
  module.def("save_module_archive", &SaveModuleArchive, py::arg("path"),
             py::arg("named_parameters"), py::arg("named_buffers"));
  module.def("load_module_archive", &LoadModuleArchive, py::arg("path"),
             py::arg("named_parameters"), py::arg("named_buffers"));
}

}  // namespace entrograd::python
