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

bool JobState::HasLiveStream() const {
  for (const Member& member : members) {
    if (member.sink != nullptr) return true;
  }
  return false;
}

}  // namespace entrograd::aggregator
