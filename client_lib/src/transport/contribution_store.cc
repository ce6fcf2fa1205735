#include "transport/contribution_store.h"

#include <algorithm>
#include <utility>

namespace entrograd {

bool ContributionStore::Contains(int64_t step, uint32_t layer) const {
  return Find(step, layer) != nullptr;
}

void ContributionStore::Keep(int64_t step, uint32_t layer,
                             std::shared_ptr<const v1::WorkerMessage> message) {
  auto& steps = by_layer_[layer];
  steps[step] = std::move(message);
  while (steps.size() > kStepsKeptPerLayer) steps.erase(steps.begin());
}

std::shared_ptr<const v1::WorkerMessage> ContributionStore::Find(
    int64_t step, uint32_t layer) const {
  auto layer_it = by_layer_.find(layer);
  if (layer_it == by_layer_.end()) return nullptr;
  auto step_it = layer_it->second.find(step);
  if (step_it == layer_it->second.end()) return nullptr;
  return step_it->second;
}

std::vector<ContributionStore::Kept> ContributionStore::Above(
    int64_t above_step) const {
  std::vector<Kept> kept;
  for (const auto& [layer, steps] : by_layer_) {
    for (auto it = steps.upper_bound(above_step); it != steps.end(); ++it) {
      kept.push_back({it->first, layer, it->second});
    }
  }
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) {
    return a.step != b.step ? a.step < b.step : a.layer < b.layer;
  });
  return kept;
}

size_t ContributionStore::size() const {
  size_t total = 0;
  for (const auto& [layer, steps] : by_layer_) total += steps.size();
  return total;
}

}  // namespace entrograd
