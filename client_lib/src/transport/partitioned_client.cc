#include "transport/partitioned_client.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace entrograd {

namespace {

absl::Status InPart(const absl::Status& status, uint32_t layer, size_t part,
                    size_t parts) {
  return absl::Status(status.code(),
                      absl::StrCat("layer ", layer, " part ", part + 1, "/",
                                   parts, ": ", status.message()));
}

}  // namespace

PartitionedClient::PartitionedClient(std::unique_ptr<Client> inner,
                                     LayerPartition partition)
    : inner_(std::move(inner)), partition_(std::move(partition)) {}

PartitionedClient::~PartitionedClient() { Close(); }

absl::Status PartitionedClient::SendLayer(LayerContribution contribution) {
  absl::StatusOr<std::vector<LayerContribution>> pieces =
      partition_.Split(contribution);
  if (!pieces.ok()) return pieces.status();
  for (size_t i = 0; i < pieces->size(); ++i) {
    absl::Status status = inner_->SendLayer(std::move((*pieces)[i]));
    if (!status.ok()) {
      return InPart(status, contribution.layer, i, pieces->size());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<MergedLayerUpdate> PartitionedClient::WaitMerged(
    int64_t step, uint32_t layer) {
  if (layer >= partition_.layer_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown layer ", layer, " (the table has ",
                     partition_.layer_count(), ")"));
  }
  const absl::Span<const LayerPartition::Part> parts = partition_.parts(layer);
  std::vector<std::optional<MergedLayerUpdate>> received(parts.size());
  {
    absl::MutexLock lock(&mu_);
    auto it = partial_.find(RoundKey(step, layer));
    if (it != partial_.end()) {
      received = std::move(it->second);
      partial_.erase(it);
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (received[i].has_value()) continue;
    absl::StatusOr<MergedLayerUpdate> piece =
        inner_->WaitMerged(step, parts[i].wire_layer);
    if (!piece.ok()) {
      // A timed-out wait may be repeated: keep what came.
      if (absl::IsDeadlineExceeded(piece.status())) {
        absl::MutexLock lock(&mu_);
        partial_[RoundKey(step, layer)] = std::move(received);
      }
      return InPart(piece.status(), layer, i, parts.size());
    }
    received[i] = std::move(*piece);
  }
  std::vector<MergedLayerUpdate> pieces;
  pieces.reserve(received.size());
  for (std::optional<MergedLayerUpdate>& piece : received) {
    pieces.push_back(std::move(*piece));
  }
  absl::StatusOr<MergedLayerUpdate> whole =
      partition_.Assemble(layer, step, pieces);
  if (!whole.ok()) return absl::InternalError(whole.status().message());
  return whole;
}

void PartitionedClient::MarkApplied(int64_t step) {
  {
    absl::MutexLock lock(&mu_);
    partial_.erase(partial_.begin(),
                   partial_.upper_bound(RoundKey(step, UINT32_MAX)));
  }
  inner_->MarkApplied(step);
}

ClientTraffic PartitionedClient::traffic() const { return inner_->traffic(); }

void PartitionedClient::Close() { inner_->Close(); }

}  // namespace entrograd
