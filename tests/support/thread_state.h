// Whether another thread of this process is blocked, read from
// /proc/self/task/<tid>/stat (Linux). Tests use it to wait until a thread
// really sleeps in a blocking call (a CondVar wait) before they do what
// must wake it, so "blocks until X" is tested as such, not by a sleep that
// hopes the thread got there.
#ifndef ENTROGRAD_TESTS_SUPPORT_THREAD_STATE_H_
#define ENTROGRAD_TESTS_SUPPORT_THREAD_STATE_H_

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace entrograd::testing {

// The kernel's id of the calling thread (what /proc/self/task lists).
inline pid_t CurrentThreadId() {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

// True when thread `tid` of this process is in an interruptible sleep
// (state S): blocked in the kernel, e.g. on the futex of a CondVar wait.
// False while it runs or is runnable, and when it does not exist.
inline bool ThreadIsAsleep(pid_t tid) {
  std::ifstream stat(absl::StrCat("/proc/self/task/", tid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "tid (comm) S ...": the command may hold spaces and parentheses, the
  // state follows the last ')'.
  const size_t name_end = line.rfind(')');
  if (name_end == std::string::npos || name_end + 2 >= line.size()) {
    return false;
  }
  return line[name_end + 2] == 'S';
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_SUPPORT_THREAD_STATE_H_
