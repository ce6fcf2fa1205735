#include "entrograd/torch/distributed_optimizer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "entrograd/codec.h"
#include "entrograd/held_share.h"
#include "entrograd/keep_count.h"
#include "entrograd/layer_compressor.h"
#include "torch/momentum_sgd.h"
#include "torch/serialize.h"

namespace entrograd {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// A float32, contiguous CPU copy (or view) of a gradient.
torch::Tensor CpuFloat(const torch::Tensor& tensor) {
  return tensor.detach().to(torch::kCPU, torch::kFloat32).contiguous();
}

// Every Step() after a failed one returns this refusal of `failure`: the
// failed step may have applied some layers and not others, and its rounds
// are spent, so the replicas could no longer be kept identical. The payload
// marks a refusal, so that it is not wrapped again.
constexpr absl::string_view kRefusalPayload =
    "type.entrograd/DistributedOptimizer.StepRefused";
absl::Status RefusalAfter(const absl::Status& failure) {
  if (failure.GetPayload(kRefusalPayload).has_value()) return failure;
  absl::Status refusal = absl::FailedPreconditionError(absl::StrCat(
      "an earlier Step() failed (", failure.ToString(),
      "); the optimizer takes no further steps: restart from a checkpoint"));
  refusal.SetPayload(kRefusalPayload, absl::Cord());
  return refusal;
}

// The checkpoint keys of layer `index`'s state.
std::string ResidualKey(size_t index) { return absl::StrCat("residual_", index); }
std::string VelocityKey(size_t index) { return absl::StrCat("velocity_", index); }
// accumulate_in_update_space: the rate the residuals and velocities are in.
constexpr char kResidualRateKey[] = "residual_rate";
std::string MomentumBufferKey(size_t index) {
  return absl::StrCat("momentum_buffer_", index);
}
std::string HeldShareKey(size_t index) {
  return absl::StrCat("held_share_", index);
}

// The held share as a checkpoint entry: float64 {window, f}. A window is an
// integer far below 2^53, so the double holds it exactly.
torch::Tensor HeldShareTensor(const HeldShare& held) {
  return torch::tensor({static_cast<double>(held.window),
                        held.effective_fraction},
                       torch::kFloat64);
}

// Reads layer `index`'s held share from `archive` into *held. Under
// share_hold_steps > 1 it must be there (without it a resumed run would
// take a fresh share mid-window and part from the uninterrupted one);
// otherwise it must not (the checkpoint was written with other options).
// Errors: INVALID_ARGUMENT naming the key and the parameter.
absl::Status ReadHeldShare(torch::serialize::InputArchive& archive,
                           size_t index, const std::string& name,
                           const std::string& path, int64_t hold_steps,
                           HeldShare* held) {
  const std::string key = HeldShareKey(index);
  torch::Tensor tensor;
  const bool present = archive.try_read(key, tensor);
  if (hold_steps <= 1) {
    if (!present) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        path, " holds ", key, " for \"", name,
        "\", but share_hold_steps is 1: it was written with other options"));
  }
  if (!present) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " has no ", key, " for \"", name, "\": share_hold_steps = ",
        hold_steps, " needs the share held when it was written (a checkpoint "
        "written with other options)"));
  }
  if (tensor.scalar_type() != torch::kFloat64 || tensor.numel() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", key, " of \"", name, "\" is ",
        c10::toString(tensor.scalar_type()), " with ", tensor.numel(),
        " elements; expected Double with 2 (window, fraction)"));
  }
  tensor = tensor.contiguous();
  const double window = tensor.data_ptr<double>()[0];
  if (!(window >= -1.0 && window < 9.0e15) || window != std::floor(window)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", key, " of \"", name, "\" has window ", window,
        "; expected an integer >= -1"));
  }
  held->window = static_cast<int64_t>(window);
  held->effective_fraction = tensor.data_ptr<double>()[1];
  absl::Status status = ValidateHeldShare(*held);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", key, " of \"", name, "\": ", status.message()));
  }
  return absl::OkStatus();
}

}  // namespace

LayerContribution ContributionOf(CompressedLayer&& compressed, uint32_t layer) {
  LayerContribution contribution;
  contribution.step = compressed.step;
  contribution.layer = layer;
  contribution.numel = static_cast<uint64_t>(compressed.numel);
  contribution.dense = compressed.dense;
  contribution.indices = std::move(compressed.indices);
  contribution.values = std::move(compressed.values);
  contribution.entropy = compressed.entropy.entropy;
  contribution.keep_ratio = compressed.keep_ratio;
  return contribution;
}

struct DistributedOptimizer::Layer {
  std::string name;
  torch::Tensor parameter;
  int64_t numel = 0;
  std::unique_ptr<LayerCompressor> compressor;
  // The autograd hook's handle; valid only when hook_registered (a Create
  // that fails returns before registering any, and LibTorch throws on
  // removing a hook that is not there).
  unsigned hook = 0;
  bool hook_registered = false;
  // B: with momentum correction, the momentum buffer of a layer sent whole
  // (ALGORITHM.md 7), flat, on the parameter's device; undefined otherwise.
  torch::Tensor momentum_buffer;
  // Set by the hook once this step's gradient was handled.
  std::atomic<bool> handled{false};
  std::atomic<int64_t> compress_nanos{0};
  // This step's entries sent (by the hook's thread); folded into totals by
  // Step().
  std::atomic<int64_t> sent_this_step{0};
  LayerTotals totals;
  EntropyStats pending_entropy;  // entropy_budget: Accumulate's result
  // Global top-k or a lossy wire value type: this step's sent entries
  // (ascending, as selected in float32), until the merged update shows which
  // of them were applied (all of them unless `sent_global_top_k`).
  std::vector<uint32_t> sent_indices;
  std::vector<float> sent_values;
  bool sent_global_top_k = false;
};

std::vector<LayerSpecification> LayerTableOf(
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters) {
  std::vector<LayerSpecification> table;
  for (const auto& [name, tensor] : parameters) {
    table.push_back({name, static_cast<uint64_t>(tensor.numel())});
  }
  return table;
}

namespace {
double ShareOf(int64_t entries, int64_t steps, int64_t numel) {
  if (steps <= 0 || numel <= 0) return 0.0;
  return static_cast<double>(entries) /
         (static_cast<double>(steps) * static_cast<double>(numel));
}
}  // namespace

double LayerTotals::sent_share() const {
  return ShareOf(sent_entries, steps, numel);
}
double LayerTotals::merged_share() const {
  return ShareOf(merged_entries, steps, numel);
}

uint64_t HashOfParameters(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> host;
  std::vector<absl::Span<const float>> spans;
  for (const torch::Tensor& parameter : parameters) {
    host.push_back(CpuFloat(parameter));
    spans.emplace_back(host.back().data_ptr<float>(), host.back().numel());
  }
  return HashParameters(spans);
}

DistributedOptimizer::DistributedOptimizer(
    const DistributedOptimizerOptions& options, Client* client,
    int64_t first_step)
    : options_(options), client_(client), step_(first_step) {}

DistributedOptimizer::~DistributedOptimizer() {
  for (auto& layer : layers_) {
    if (layer->hook_registered) layer->parameter.remove_hook(layer->hook);
  }
}

absl::StatusOr<std::unique_ptr<DistributedOptimizer>>
DistributedOptimizer::Create(
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters,
    const DistributedOptimizerOptions& options, Client* client,
    int64_t first_step) try {
  if (absl::Status status = ValidateCompressionOptions(options.compression);
      !status.ok()) {
    return status;
  }
  if (client == nullptr) return absl::InvalidArgumentError("client is null");
  if (parameters.empty()) {
    return absl::InvalidArgumentError("the model has no parameters");
  }
  if (!(options.learning_rate > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learning_rate = ", options.learning_rate, "; expected > 0"));
  }
  if (!(options.weight_decay >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight_decay = ", options.weight_decay, "; expected >= 0"));
  }
  if (!IsValidMergedKeepFactor(options.merged_keep_factor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "merged_keep_factor = ", options.merged_keep_factor,
        "; expected 0 (the whole union) or a number in [1, 1e6]"));
  }
  if (options.accumulate_in_update_space &&
      !options.compression.momentum_correction) {
    return absl::InvalidArgumentError(
        "accumulate_in_update_space needs momentum correction: without it "
        "the inner optimizer applies the merged gradient at its own rate");
  }
  if (!options.compression.momentum_correction &&
      options.inner_optimizer == nullptr) {
    return absl::InvalidArgumentError(
        "without momentum correction an inner_optimizer must step on the "
        "merged gradient");
  }
  std::unique_ptr<DistributedOptimizer> optimizer(
      new DistributedOptimizer(options, client, first_step));
  for (size_t index = 0; index < parameters.size(); ++index) {
    const auto& [name, tensor] = parameters[index];
    if (!tensor.requires_grad()) {
      // It would get no hook and no gradient, and LibTorch refuses the hook.
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter \"", name,
          "\" does not require a gradient; pass only the parameters being "
          "trained, in the same order on every rank"));
    }
    if (tensor.scalar_type() != torch::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter \"", name, "\" is ", c10::toString(tensor.scalar_type()),
          "; entrograd trains float32 parameters"));
    }
    auto layer = std::make_unique<Layer>();
    layer->name = name;
    layer->parameter = tensor;
    layer->numel = tensor.numel();
    layer->totals.name = name;
    layer->totals.numel = layer->numel;
    absl::StatusOr<std::unique_ptr<LayerCompressor>> compressor =
        LayerCompressor::Create(layer->numel, options.compression);
    if (!compressor.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter \"", name, "\": ", compressor.status().message()));
    }
    layer->compressor = std::move(*compressor);
    if (options.compression.momentum_correction &&
        layer->compressor->sent_whole()) {
      layer->momentum_buffer = torch::zeros(
          {layer->numel},
          torch::TensorOptions().dtype(torch::kFloat32).device(tensor.device()));
    }
    optimizer->layers_.push_back(std::move(layer));
  }
  // Hooks last: they capture the optimizer, which is complete now.
  DistributedOptimizer* raw = optimizer.get();
  for (size_t index = 0; index < raw->layers_.size(); ++index) {
    Layer& layer = *raw->layers_[index];
    layer.hook = layer.parameter.register_hook(
        [raw, index](torch::Tensor gradient) { raw->OnGradient(index, gradient); });
    layer.hook_registered = true;
  }
  return optimizer;
} catch (const c10::Error& error) {
  return absl::InternalError(
      absl::StrCat("LibTorch: ", error.what_without_backtrace()));
}

void DistributedOptimizer::OnGradient(size_t index,
                                      const torch::Tensor& gradient) {
  absl::Status status;
  try {
    status = CompressAndSend(index, gradient);
  } catch (const c10::Error& error) {
    status = absl::InternalError(
        absl::StrCat("LibTorch: ", error.what_without_backtrace()));
  }
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (first_error_.ok()) first_error_ = status;
  }
}

absl::Status DistributedOptimizer::CompressAndSend(
    size_t index, const torch::Tensor& gradient) {
  Layer& layer = *layers_[index];
  if (layer.handled.exchange(true)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "parameter \"", layer.name, "\" got a second gradient in step ", step_,
        "; call Step() after each backward pass"));
  }
  const auto start = std::chrono::steady_clock::now();
  torch::Tensor host;
  {
    torch::NoGradGuard no_grad;
    torch::Tensor effective = gradient;
    if (options_.weight_decay > 0.0) {
      effective = gradient + options_.weight_decay * layer.parameter.detach();
    }
    host = CpuFloat(effective);
  }
  absl::Span<const float> values(host.data_ptr<float>(), layer.numel);
  if (options_.compression.policy == KeepPolicy::kEntropyBudget) {
    // The budget needs every layer's entropy: select in Step().
    absl::StatusOr<EntropyStats> entropy = layer.compressor->Accumulate(values);
    if (!entropy.ok()) return entropy.status();
    layer.pending_entropy = *entropy;
    layer.compress_nanos += static_cast<int64_t>(SecondsSince(start) * 1e9);
    return absl::OkStatus();
  }
  CompressedLayer compressed;
  absl::Status status = layer.compressor->Compress(values, step_, &compressed);
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("parameter \"", layer.name,
                                                    "\": ", status.message()));
  }
  const double seconds = SecondsSince(start);
  layer.compress_nanos += static_cast<int64_t>(seconds * 1e9);
  if (options_.metrics != nullptr) {
    options_.metrics->ObserveCompress(seconds);
    options_.metrics->ObserveLayer(layer.name, compressed.entropy.entropy,
                                   compressed.keep_ratio);
  }
  return SendCompressed(index, std::move(compressed));
}

absl::Status DistributedOptimizer::SendCompressed(size_t index,
                                                  CompressedLayer&& compressed) {
  Layer& layer = *layers_[index];
  LayerContribution contribution =
      ContributionOf(std::move(compressed), static_cast<uint32_t>(index));
  layer.sent_this_step.store(contribution.dense
                                 ? layer.numel
                                 : static_cast<int64_t>(contribution.indices.size()));
  layer.sent_indices.clear();
  layer.sent_values.clear();
  layer.sent_global_top_k = false;
  if (layer.compressor->sent_whole()) {
    return client_->SendLayer(std::move(contribution));
  }
  if (options_.merged_keep_factor > 0.0 && !contribution.dense) {
    contribution.merged_keep_factor = options_.merged_keep_factor;
    layer.sent_global_top_k = true;
  }
  if (layer.sent_global_top_k || client_->value_type() != ValueType::kF32) {
    if (contribution.dense) {  // every element, in index order
      layer.sent_indices.resize(contribution.values.size());
      std::iota(layer.sent_indices.begin(), layer.sent_indices.end(), 0u);
    } else {
      layer.sent_indices = contribution.indices;
    }
    layer.sent_values = contribution.values;
  }
  return client_->SendLayer(std::move(contribution));
}

absl::Status DistributedOptimizer::PutBackUnapplied(
    size_t index, const DecodedPayload& merged) {
  Layer& layer = *layers_[index];
  const ValueType wire_type = client_->value_type();
  std::vector<uint32_t> indices;
  std::vector<float> values;
  // Both ascending: one merge-like walk. A dense payload carries every
  // element (the aggregator never sends a merge that left entries out
  // dense), and the union leaves nothing out.
  const bool may_leave_out = layer.sent_global_top_k && !merged.dense;
  size_t m = 0;
  for (size_t j = 0; j < layer.sent_indices.size(); ++j) {
    const uint32_t sent = layer.sent_indices[j];
    const float selected = layer.sent_values[j];
    bool applied = true;
    if (may_leave_out) {
      while (m < merged.indices.size() && merged.indices[m] < sent) ++m;
      applied = m < merged.indices.size() && merged.indices[m] == sent;
    }
    // Applied: what the wire's rounding took off (exact in float32 unless
    // the value saturated: the rounded value is 0 or within a factor of 2 of
    // the selected one). Left out: all of it.
    const float keep =
        applied ? selected - RoundToValueType(wire_type, selected) : selected;
    if (applied && keep == 0.0f) continue;
    indices.push_back(sent);
    values.push_back(keep);
  }
  layer.sent_indices.clear();
  layer.sent_values.clear();
  if (indices.empty()) return absl::OkStatus();
  absl::Status status = layer.compressor->KeepUnapplied(indices, values);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("step ", step_, ", parameter \"",
                                     layer.name, "\": ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status DistributedOptimizer::Step() {
  absl::Status status;
  try {
    status = StepImpl();
  } catch (const c10::Error& error) {
    status = absl::InternalError(
        absl::StrCat("LibTorch: ", error.what_without_backtrace()));
  }
  if (!status.ok()) {
    // Returned as it is this once (a hook's error too); refused from now on.
    std::lock_guard<std::mutex> lock(error_mutex_);
    first_error_ = RefusalAfter(status);
  }
  return status;
}

absl::Status DistributedOptimizer::StepImpl() {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!first_error_.ok()) return first_error_;
  }
  StepTiming timing;
  // Layers without a gradient this step still take part in their rounds.
  for (size_t index = 0; index < layers_.size(); ++index) {
    if (!layers_[index]->handled.load()) {
      torch::Tensor zeros = torch::zeros({layers_[index]->numel}, torch::kFloat32);
      absl::Status status = CompressAndSend(index, zeros);
      if (!status.ok()) return status;
    }
  }
  if (options_.compression.policy == KeepPolicy::kEntropyBudget) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<BudgetLayer> budget;
    std::vector<size_t> budget_index;
    for (size_t index = 0; index < layers_.size(); ++index) {
      const Layer& layer = *layers_[index];
      if (layer.numel < options_.compression.dense_below) continue;
      budget.push_back({layer.numel, layer.pending_entropy.effective_fraction,
                        layer.pending_entropy.all_zero});
      budget_index.push_back(index);
    }
    const double density = WarmupDensity(options_.compression.budget_density,
                                         options_.compression.warmup_steps, step_);
    absl::StatusOr<std::vector<int64_t>> keep = BudgetKeepCounts(budget, density);
    if (!keep.ok()) return keep.status();
    std::vector<int64_t> keep_of(layers_.size(), -1);
    for (size_t j = 0; j < budget_index.size(); ++j) keep_of[budget_index[j]] = (*keep)[j];
    for (size_t index = 0; index < layers_.size(); ++index) {
      Layer& layer = *layers_[index];
      const int64_t k = keep_of[index] < 0 ? layer.numel : keep_of[index];
      CompressedLayer compressed;
      absl::Status status = layer.compressor->SelectTopK(
          k, step_, static_cast<double>(k) / layer.numel, &compressed);
      if (!status.ok()) return status;
      status = SendCompressed(index, std::move(compressed));
      if (!status.ok()) return status;
    }
    timing.compress_seconds += SecondsSince(start);
  }

  torch::NoGradGuard no_grad;
  const bool plain_sgd = options_.compression.momentum_correction;
  const float learning_rate = static_cast<float>(options_.learning_rate);
  for (size_t index = 0; index < layers_.size(); ++index) {
    Layer& layer = *layers_[index];
    const auto wait_start = std::chrono::steady_clock::now();
    absl::StatusOr<MergedLayerUpdate> merged =
        client_->WaitMerged(step_, static_cast<uint32_t>(index));
    timing.wait_seconds += SecondsSince(wait_start);
    if (!merged.ok()) {
      return absl::Status(merged.status().code(),
                          absl::StrCat("step ", step_, ", parameter \"",
                                       layer.name, "\": ",
                                       merged.status().message()));
    }
    const auto apply_start = std::chrono::steady_clock::now();
    const DecodedPayload& payload = merged->payload;
    layer.totals.merged_entries +=
        payload.dense ? layer.numel : static_cast<int64_t>(payload.indices.size());
    if (absl::Status status = PutBackUnapplied(index, payload); !status.ok()) {
      return status;
    }
    torch::Tensor& parameter = layer.parameter;
    if (layer.momentum_buffer.defined()) {
      // Sent whole: no local momentum was applied (5.1), so B carries it.
      torch::Tensor dense = torch::zeros({layer.numel}, torch::kFloat32);
      absl::Status status = ScatterInto(
          payload, absl::MakeSpan(dense.data_ptr<float>(), layer.numel));
      if (!status.ok()) return status;
      MomentumSgdStep(dense.to(parameter.device()), options_.compression.momentum,
                      options_.learning_rate, layer.momentum_buffer, parameter);
    } else if (plain_sgd && parameter.device().is_cpu() &&
               parameter.is_contiguous()) {
      // p <- p - lr * merged, touching only the merged entries.
      float* data = parameter.data_ptr<float>();
      if (payload.dense) {
        for (int64_t i = 0; i < layer.numel; ++i) {
          data[i] = data[i] - learning_rate * payload.values[i];
        }
      } else {
        for (size_t j = 0; j < payload.indices.size(); ++j) {
          float& p = data[payload.indices[j]];
          p = p - learning_rate * payload.values[j];
        }
      }
    } else {
      torch::Tensor dense = torch::zeros({layer.numel}, torch::kFloat32);
      absl::Status status = ScatterInto(
          payload, absl::MakeSpan(dense.data_ptr<float>(), layer.numel));
      if (!status.ok()) return status;
      dense = dense.view(parameter.sizes()).to(parameter.device());
      if (plain_sgd) {
        // lr * merged is a tensor of its own, never sub_'s alpha, which
        // vectorised code fuses into a multiply-add: the same bits as the
        // loop above, whatever the parameter's memory layout.
        parameter.sub_(dense.mul(options_.learning_rate));
      } else {
        parameter.mutable_grad() = dense;
      }
    }
    if (plain_sgd) parameter.mutable_grad() = torch::Tensor();
    timing.apply_seconds += SecondsSince(apply_start);
  }
  if (!plain_sgd) options_.inner_optimizer->step();
  for (auto& layer : layers_) {
    timing.compress_seconds += layer->compress_nanos.exchange(0) * 1e-9;
    layer->totals.sent_entries += layer->sent_this_step.exchange(0);
    ++layer->totals.steps;
    layer->handled.store(false);
  }
  client_->MarkApplied(step_);
  if (options_.metrics != nullptr) options_.metrics->UpdateTraffic(client_->traffic());
  ++step_;
  last_timing_ = timing;
  return absl::OkStatus();
}

absl::Status DistributedOptimizer::set_learning_rate(double learning_rate) {
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learning_rate = ", learning_rate, "; expected finite and > 0"));
  }
  if (!options_.compression.momentum_correction) {
    return absl::FailedPreconditionError(
        "without momentum correction the inner optimizer applies the merged "
        "gradient: set the learning rate there");
  }
  if (options_.accumulate_in_update_space &&
      learning_rate != options_.learning_rate) {
    const double factor = options_.learning_rate / learning_rate;
    // Every layer is checked before any is scaled: nothing changes on error.
    for (const auto& layer : layers_) {
      if (absl::Status status = layer->compressor->CheckScaleState(factor);
          !status.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "learning_rate ", options_.learning_rate, " -> ", learning_rate,
            ": parameter \"", layer->name, "\": ", status.message()));
      }
    }
    for (auto& layer : layers_) layer->compressor->ScaleCheckedState(factor);
  }
  options_.learning_rate = learning_rate;
  return absl::OkStatus();
}

std::vector<LayerTotals> DistributedOptimizer::layer_totals() const {
  std::vector<LayerTotals> totals;
  totals.reserve(layers_.size());
  for (const auto& layer : layers_) totals.push_back(layer->totals);
  return totals;
}

absl::Status DistributedOptimizer::SaveState(const std::string& path) const try {
  torch::serialize::OutputArchive archive;
  archive.write("step", torch::tensor(step_, torch::kInt64));
  archive.write("layers", torch::tensor(static_cast<int64_t>(layers_.size()),
                                        torch::kInt64));
  for (size_t index = 0; index < layers_.size(); ++index) {
    const LayerCompressor& compressor = *layers_[index]->compressor;
    auto copy = [](absl::Span<const float> values) {
      torch::Tensor tensor = torch::empty({static_cast<int64_t>(values.size())},
                                          torch::kFloat32);
      if (!values.empty()) {
        std::memcpy(tensor.data_ptr<float>(), values.data(),
                    values.size() * sizeof(float));
      }
      return tensor;
    };
    archive.write(ResidualKey(index), copy(compressor.residual()));
    archive.write(VelocityKey(index), copy(compressor.velocity()));
    const torch::Tensor& buffer = layers_[index]->momentum_buffer;
    if (buffer.defined()) {
      archive.write(MomentumBufferKey(index), buffer.to(torch::kCPU).clone());
    }
    if (options_.compression.share_hold_steps > 1) {
      archive.write(HeldShareKey(index),
                    HeldShareTensor(compressor.held_share()));
    }
  }
  if (options_.accumulate_in_update_space) {
    // The units the residuals and velocities are in.
    archive.write(kResidualRateKey,
                  torch::tensor(options_.learning_rate, torch::kFloat64));
  }
  archive.save_to(path);
  return absl::OkStatus();
} catch (const c10::Error& error) {
  return absl::InternalError(absl::StrCat("saving optimizer state to ", path,
                                          ": ", error.what_without_backtrace()));
}

absl::Status DistributedOptimizer::LoadState(const std::string& path) try {
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  torch::Tensor step, layer_count;
  archive.read("step", step);
  archive.read("layers", layer_count);
  // Under update-space accumulation the saved G and V are in the units of
  // the rate at the step they were saved: that rate comes back with them,
  // so that the schedule's next set_learning_rate scales them from it.
  torch::Tensor residual_rate;
  const bool has_residual_rate = archive.try_read(kResidualRateKey, residual_rate);
  if (options_.accumulate_in_update_space != has_residual_rate) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        has_residual_rate ? " holds " : " has no ", kResidualRateKey,
        has_residual_rate
            ? ": it was written under accumulate_in_update_space, and these "
              "options keep the residual in gradient units"
            : ": accumulate_in_update_space needs the rate its residuals "
              "are in; the checkpoint was written without the option"));
  }
  // Read once, after its type and size are known to allow it.
  const double saved_rate = has_residual_rate &&
                                    residual_rate.scalar_type() == torch::kFloat64 &&
                                    residual_rate.numel() == 1
                                ? residual_rate.item<double>()
                                : 0.0;
  if (has_residual_rate && (!(saved_rate > 0.0) || !std::isfinite(saved_rate))) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", kResidualRateKey,
        " is not one finite float64 rate > 0"));
  }
  if (layer_count.item<int64_t>() != static_cast<int64_t>(layers_.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " holds ", layer_count.item<int64_t>(), " layers; the model has ",
        layers_.size()));
  }
  struct SavedLayer {
    torch::Tensor residual;
    torch::Tensor velocity;
    torch::Tensor momentum_buffer;
    HeldShare held_share;
  };
  std::vector<SavedLayer> saved(layers_.size());
  // Validate all before changing any layer.
  for (size_t index = 0; index < layers_.size(); ++index) {
    const Layer& layer = *layers_[index];
    SavedLayer& state = saved[index];
    archive.read(ResidualKey(index), state.residual);
    archive.read(VelocityKey(index), state.velocity);
    for (const auto& [key, tensor] :
         {std::make_pair(ResidualKey(index), &state.residual),
          std::make_pair(VelocityKey(index), &state.velocity)}) {
      if (tensor->scalar_type() != torch::kFloat32) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": ", key, " of \"", layer.name, "\" is ",
            c10::toString(tensor->scalar_type()), "; expected Float"));
      }
    }
    if (state.residual.numel() != layer.numel) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": residual of \"", layer.name, "\" has ",
          state.residual.numel(), " elements; expected ", layer.numel));
    }
    if (absl::Status status = ReadHeldShare(
            archive, index, layer.name, path,
            options_.compression.share_hold_steps, &state.held_share);
        !status.ok()) {
      return status;
    }
    const std::string key = MomentumBufferKey(index);
    const bool has_buffer = archive.try_read(key, state.momentum_buffer);
    if (layer.momentum_buffer.defined() && !has_buffer) {
      // Resuming with B = 0 would silently train differently from the run
      // that wrote the checkpoint.
      return absl::InvalidArgumentError(absl::StrCat(
          path, " has no ", key, " for \"", layer.name,
          "\": the momentum buffer of a layer sent whole under momentum "
          "correction (ALGORITHM.md 7). The checkpoint was written before "
          "entrograd kept one, or with other options (policy, dense_below, "
          "momentum_correction)"));
    }
    if (!layer.momentum_buffer.defined() && has_buffer) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " holds ", key, " for \"", layer.name,
          "\", but these options do not send it whole under momentum "
          "correction: it was written with other options"));
    }
    if (has_buffer) {
      const torch::Tensor& buffer = state.momentum_buffer;
      if (buffer.scalar_type() != torch::kFloat32 ||
          buffer.numel() != layer.numel) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": ", key, " of \"", layer.name, "\" is ",
            c10::toString(buffer.scalar_type()), " with ", buffer.numel(),
            " elements; expected Float with ", layer.numel));
      }
      if (!torch::isfinite(buffer).all().item<bool>()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": ", key, " of \"", layer.name,
            "\" holds a non-finite value"));
      }
    }
  }
  // RestoreState can still refuse a layer (non-finite values, a nonzero
  // residual of a layer sent whole): the layers restored before it are put
  // back, so that a refused checkpoint changes nothing.
  std::vector<std::pair<std::vector<float>, std::vector<float>>> previous;
  for (size_t index = 0; index < layers_.size(); ++index) {
    LayerCompressor& compressor = *layers_[index]->compressor;
    previous.emplace_back(
        std::vector<float>(compressor.residual().begin(),
                           compressor.residual().end()),
        std::vector<float>(compressor.velocity().begin(),
                           compressor.velocity().end()));
    torch::Tensor residual = saved[index].residual.contiguous();
    torch::Tensor velocity = saved[index].velocity.contiguous();
    absl::Status status = compressor.RestoreState(
        absl::MakeConstSpan(residual.data_ptr<float>(), residual.numel()),
        absl::MakeConstSpan(velocity.data_ptr<float>(), velocity.numel()));
    if (!status.ok()) {
      for (size_t undo = 0; undo < index; ++undo) {
        layers_[undo]
            ->compressor->RestoreState(previous[undo].first,
                                       previous[undo].second)
            .IgnoreError();  // the state it held: always accepted
      }
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": \"", layers_[index]->name, "\": ", status.message()));
    }
  }
  for (size_t index = 0; index < layers_.size(); ++index) {
    torch::Tensor& buffer = layers_[index]->momentum_buffer;
    if (buffer.defined()) buffer.copy_(saved[index].momentum_buffer.reshape({-1}));
    // Validated above (ReadHeldShare): accepted.
    layers_[index]->compressor->RestoreHeldShare(saved[index].held_share)
        .IgnoreError();
  }
  step_ = step.item<int64_t>();
  if (has_residual_rate) options_.learning_rate = saved_rate;
  return absl::OkStatus();
} catch (const c10::Error& error) {
  return absl::InvalidArgumentError(absl::StrCat(
      "loading optimizer state from ", path, ": ", error.what_without_backtrace()));
}

}  // namespace entrograd
