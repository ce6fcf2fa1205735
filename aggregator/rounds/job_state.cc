#include "aggregator/rounds/job_state.h"

#include <algorithm>
#include <cstdint>

namespace entrograd::aggregator {

int64_t JobState::MinAppliedStep() const {
  int64_t min_applied = members.empty() ? -1 : members[0].applied_step;
  for (const Member& member : members) {
    min_applied = std::min(min_applied, member.applied_step);
  }
  return min_applied;
}

int64_t JobState::MinJoinedAppliedStep() const {
  int64_t min_applied = INT64_MAX;
  for (const Member& member : members) {
    if (member.ever_joined) {
      min_applied = std::min(min_applied, member.applied_step);
    }
  }
  return min_applied == INT64_MAX ? -1 : min_applied;
}

std::vector<ValueType> JobState::ValueTypesEveryMemberAccepts() const {
  std::vector<ValueType> common;
  for (ValueType type : kAllValueTypes) {
    const bool everyone = std::all_of(
        members.begin(), members.end(), [type](const Member& member) {
          return !member.ever_joined ||
                 (member.accepted_value_type_bits &
                  (uint32_t{1} << static_cast<int>(type))) != 0;
        });
    if (type == ValueType::kF32 || everyone) common.push_back(type);
  }
  return common;
}

bool JobState::EveryMemberAcceptsGapRange() const {
  return std::all_of(members.begin(), members.end(), [](const Member& member) {
    return !member.ever_joined || member.accepts_gap_range;
  });
}

bool JobState::HasLiveStream() const {
  for (const Member& member : members) {
    if (member.sink != nullptr) return true;
  }
  return false;
}

}  // namespace entrograd::aggregator
