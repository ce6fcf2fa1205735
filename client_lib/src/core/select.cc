#include "entrograd/select.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/exact_select.h"
#include "core/interval_sums.h"
#include "core/magnitude_key.h"

namespace entrograd {

namespace {

absl::Status CheckLength(absl::Span<const float> values) {
  if (values.size() > kMaxLayerElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("values has ", values.size(), " elements; at most ",
                     kMaxLayerElements, " are supported"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SelectLargestMagnitude(absl::Span<const float> values, int64_t k,
                                    std::vector<uint32_t>* indices,
                                    SelectScratch* scratch) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (absl::Status status = CheckLength(values); !status.ok()) return status;
  if (k < 0 || k > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("k = ", k, " is out of range [0, ", n, "]"));
  }
  SelectScratch local_scratch;
  if (scratch == nullptr) scratch = &local_scratch;
  // Select into a local vector so that *indices is untouched on error.
  std::vector<uint32_t> selected;
  absl::Status status =
      SelectLargestExact("values", values, k, scratch, &selected);
  if (status.ok()) indices->swap(selected);
  return status;
}

absl::Status SelectAtLeastMagnitude(absl::Span<const float> values,
                                    float threshold,
                                    std::vector<uint32_t>* indices) {
  if (!(threshold >= 0.0f && std::isfinite(threshold))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "threshold = ", threshold, "; expected a finite value >= 0"));
  }
  if (absl::Status status = CheckLength(values); !status.ok()) return status;
  const uint32_t min_key = MagnitudeKey(threshold);
  std::vector<uint32_t> selected;
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t key = MagnitudeKey(values[i]);
    if (key >= kNonFiniteKey) {
      return NonFiniteError("values", values, static_cast<int64_t>(i),
                            static_cast<int64_t>(i) + 1);
    }
    if (key >= min_key) selected.push_back(static_cast<uint32_t>(i));
  }
  *indices = std::move(selected);
  return absl::OkStatus();
}

}  // namespace entrograd
