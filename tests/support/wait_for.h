// Waiting for an event instead of sleeping: tests that need one thing to
// happen before the next poll the condition that shows it, with a deadline,
// so they are as fast as the machine allows and fail (instead of passing
// without testing anything) when the event never comes.
#ifndef ENTROGRAD_TESTS_SUPPORT_WAIT_FOR_H_
#define ENTROGRAD_TESTS_SUPPORT_WAIT_FOR_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace entrograd::testing {

// Polls `condition` every millisecond until it holds (true) or `timeout`
// passed (false). The condition is called on the caller's thread.
inline bool WaitFor(const std::function<bool()>& condition,
                    absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));  // the polling interval
  }
  return true;
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_SUPPORT_WAIT_FOR_H_
