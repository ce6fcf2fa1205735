// The job id rule of entrograd.v1 (Join.job_id): 1 to 128 of
// [A-Za-z0-9._-]. Checked by the client before it connects and by the
// aggregator at Join, from this one definition.
#ifndef ENTROGRAD_WIRE_JOB_ID_H_
#define ENTROGRAD_WIRE_JOB_ID_H_

#include "absl/strings/string_view.h"

namespace entrograd {

inline bool IsValidJobId(absl::string_view job_id) {
  if (job_id.empty() || job_id.size() > 128) return false;
  for (char c : job_id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace entrograd

#endif  // ENTROGRAD_WIRE_JOB_ID_H_
