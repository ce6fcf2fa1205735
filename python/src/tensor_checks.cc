#include "python/src/tensor_checks.h"

#include "absl/strings/str_cat.h"
#include "python/src/status_error.h"

namespace entrograd::python {

namespace {

std::string Describe(const torch::Tensor& tensor) {
  return absl::StrCat(c10::toString(tensor.scalar_type()), " on ",
                      tensor.device().str());
}

}  // namespace

void CheckCpuFloat32(const std::string& what, const torch::Tensor& tensor) {
  if (!tensor.defined()) ThrowInvalidArgument(absl::StrCat(what, " is None"));
  if (tensor.layout() != torch::kStrided) {
    ThrowInvalidArgument(
        absl::StrCat(what, " is not a dense (strided) tensor"));
  }
  if (tensor.scalar_type() != torch::kFloat32 || !tensor.device().is_cpu()) {
    ThrowInvalidArgument(absl::StrCat(what, " is ", Describe(tensor),
                                      "; expected Float (float32) on cpu"));
  }
  if (!tensor.is_contiguous()) {
    ThrowInvalidArgument(
        absl::StrCat(what, " is not contiguous; pass tensor.contiguous()"));
  }
}

void CheckParameter(const std::string& name, const torch::Tensor& tensor) {
  const std::string what = absl::StrCat("parameter \"", name, "\"");
  if (!tensor.defined()) ThrowInvalidArgument(absl::StrCat(what, " is None"));
  if (tensor.layout() != torch::kStrided) {
    ThrowInvalidArgument(
        absl::StrCat(what, " is not a dense (strided) tensor"));
  }
  if (!tensor.device().is_cpu() && !tensor.device().is_cuda()) {
    ThrowInvalidArgument(
        absl::StrCat(what, " is on ", tensor.device().str(),
                     "; entrograd trains parameters on cpu or cuda"));
  }
  if (tensor.scalar_type() != torch::kFloat32) {
    ThrowInvalidArgument(absl::StrCat(what, " is ", Describe(tensor),
                                      "; entrograd trains float32 parameters"));
  }
}

}  // namespace entrograd::python
