#include "entrograd_cli/inspect_command.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "entrograd/common/status_macros.h"
#include "entrograd/keep_count.h"
#include "entrograd/layer_compressor.h"
#include "entrograd_cli/array_file_reader.h"

namespace entrograd::cli {
namespace {

// Always float32 values: the report compares index encodings, and f32 is
// the exact (default) value type.
absl::StatusOr<EncodedPayload> Encode(const CompressedLayer& layer,
                                      std::optional<IndexEncoding> encoding) {
  EncodeOptions options;
  options.value_type = ValueType::kF32;
  options.index_encoding = encoding;
  if (layer.dense) return EncodeDense(layer.values, options);
  return EncodeSparse(static_cast<uint64_t>(layer.numel), layer.indices,
                      layer.values, options);
}

absl::Status WithPath(const absl::Status& status, absl::string_view path) {
  return absl::Status(status.code(),
                      absl::StrCat(path, ": ", status.message()));
}

// The budget policy's keep count per file, and the entropy each was computed
// from (to notice a file that changes between the two reads).
struct BudgetPlan {
  std::vector<int64_t> keep_counts;
  std::vector<EntropyStats> entropies;
};

absl::StatusOr<EntropyStats> FirstStepEntropy(
    absl::Span<const float> gradient, const CompressionOptions& options) {
  ENTROGRAD_ASSIGN_OR_RETURN(
      std::unique_ptr<LayerCompressor> compressor,
      LayerCompressor::Create(static_cast<int64_t>(gradient.size()), options));
  return compressor->Accumulate(gradient);
}

// The budget policy's first pass: every file's entropy, then
// BudgetKeepCounts over the layers that are not sent dense.
absl::StatusOr<BudgetPlan> PlanBudget(absl::Span<const std::string> paths,
                                      const CompressionOptions& options) {
  BudgetPlan plan;
  plan.keep_counts.assign(paths.size(), 0);
  plan.entropies.resize(paths.size());
  std::vector<BudgetLayer> layers;
  std::vector<size_t> layer_file;  // file index of each budget layer
  for (size_t f = 0; f < paths.size(); ++f) {
    ENTROGRAD_ASSIGN_OR_RETURN(std::vector<float> gradient,
                               ReadArrayFile(paths[f]));
    const auto numel = static_cast<int64_t>(gradient.size());
    absl::StatusOr<EntropyStats> entropy = FirstStepEntropy(gradient, options);
    if (!entropy.ok()) return WithPath(entropy.status(), paths[f]);
    plan.entropies[f] = *entropy;
    // Small layers are sent dense and take no share of the budget
    // (keep_count.h: the caller leaves them out).
    if (numel < options.dense_below) {
      plan.keep_counts[f] = numel;
      continue;
    }
    layers.push_back({numel, entropy->effective_fraction, entropy->all_zero});
    layer_file.push_back(f);
  }
  ENTROGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> counts,
                             BudgetKeepCounts(layers, options.budget_density));
  for (size_t l = 0; l < counts.size(); ++l) {
    plan.keep_counts[layer_file[l]] = counts[l];
  }
  return plan;
}

bool SameEntropy(const EntropyStats& a, const EntropyStats& b) {
  return a.intervals == b.intervals && a.entropy == b.entropy &&
         a.all_zero == b.all_zero;
}

}  // namespace

absl::StatusOr<LayerInspection> InspectGradient(
    absl::string_view name, absl::Span<const float> gradient,
    const CompressionOptions& options, std::optional<int64_t> keep_count) {
  ENTROGRAD_ASSIGN_OR_RETURN(
      std::unique_ptr<LayerCompressor> compressor,
      LayerCompressor::Create(static_cast<int64_t>(gradient.size()), options));
  ENTROGRAD_ASSIGN_OR_RETURN(EntropyStats entropy,
                             compressor->Accumulate(gradient));
  CompressedLayer layer;
  if (keep_count.has_value()) {
    const double ratio =
        static_cast<double>(*keep_count) / static_cast<double>(gradient.size());
    ENTROGRAD_RETURN_IF_ERROR(
        compressor->SelectTopK(*keep_count, /*step=*/0, ratio, &layer));
  } else {
    ENTROGRAD_RETURN_IF_ERROR(compressor->SelectWithPolicy(/*step=*/0, &layer));
  }

  LayerInspection inspection;
  inspection.name = std::string(name);
  inspection.numel = layer.numel;
  inspection.entropy = entropy;
  inspection.keep_ratio = layer.keep_ratio;
  inspection.k = layer.k;
  inspection.dense = layer.dense;
  for (size_t e = 0; e < kIndexEncodingCount; ++e) {
    ENTROGRAD_ASSIGN_OR_RETURN(EncodedPayload payload,
                               Encode(layer, kAllIndexEncodings[e]));
    inspection.encoded_bytes[e] = payload.WireBytes();
  }
  ENTROGRAD_ASSIGN_OR_RETURN(EncodedPayload chosen,
                             Encode(layer, std::nullopt));
  inspection.auto_encoding = chosen.index_encoding;
  return inspection;
}

absl::StatusOr<std::vector<LayerInspection>> InspectFiles(
    absl::Span<const std::string> paths, const CompressionOptions& options) {
  ENTROGRAD_RETURN_IF_ERROR(ValidateCompressionOptions(options));
  std::optional<BudgetPlan> budget;
  if (options.policy == KeepPolicy::kEntropyBudget) {
    ENTROGRAD_ASSIGN_OR_RETURN(budget, PlanBudget(paths, options));
  }
  std::vector<LayerInspection> inspections;
  inspections.reserve(paths.size());
  for (size_t f = 0; f < paths.size(); ++f) {
    ENTROGRAD_ASSIGN_OR_RETURN(std::vector<float> gradient,
                               ReadArrayFile(paths[f]));
    std::optional<int64_t> keep_count;
    if (budget.has_value()) keep_count = budget->keep_counts[f];
    absl::StatusOr<LayerInspection> inspection =
        InspectGradient(BaseName(paths[f]), gradient, options, keep_count);
    if (!inspection.ok()) return WithPath(inspection.status(), paths[f]);
    if (budget.has_value() &&
        !SameEntropy(inspection->entropy, budget->entropies[f])) {
      return absl::AbortedError(
          absl::StrCat(paths[f],
                       ": the file changed between the two reads the "
                       "entropy_budget policy makes"));
    }
    inspections.push_back(*std::move(inspection));
  }
  return inspections;
}

}  // namespace entrograd::cli
