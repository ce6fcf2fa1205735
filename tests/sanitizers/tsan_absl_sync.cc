// ThreadSanitizer and the system Abseil. Debian's libabsl is not built with
// -fsanitize=thread, so TSan does not see absl::Mutex, absl::CondVar or
// absl::Notification synchronise anything (they block on raw futexes), and
// reports every access that one of them orders as a race. This file, linked
// into each test binary of a TSan build only (tests/CMakeLists.txt), defines
// the out-of-line members of those classes itself: each calls the real one
// (found with dlsym(RTLD_NEXT), i.e. in libabsl_synchronization.so) and
// tells TSan the happens-before edge it implies, with __tsan_release before
// a mutex is given up and __tsan_acquire after it is taken.
//
// Calls from our code bind to these definitions at link time; calls from
// the shared libraries (gRPC, Abseil itself) reach them only because the
// executable exports them (tsan_interposers.dynamic_list), and they get the
// same edges: gRPC's internals are not instrumented, but what they order
// between our callbacks then is.
//
// Inline paths cannot be interposed: Notification::HasBeenNotified is an
// atomic load compiled into our (instrumented) code; Notify releases on
// that atomic's address, which TSan's acquire load then synchronises with.
// Condition functions may be evaluated by another thread inside the real
// Unlock (Abseil hands the mutex over); each is wrapped so that its reads
// are ordered like any other access under the mutex.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#define ENTROGRAD_TSAN_STRINGIFY_INNER(x) #x
#define ENTROGRAD_TSAN_STRINGIFY(x) ENTROGRAD_TSAN_STRINGIFY_INNER(x)

namespace {

// The Itanium-mangled name of absl::<inline namespace>::`member`, where
// `member` is the mangled rest after the namespaces ("5Mutex4LockEv").
// `const_member` for a const member function (_ZNK).
std::string AbslSymbol(const char* member, bool const_member = false) {
  const char* inline_namespace =
      ENTROGRAD_TSAN_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return std::string(const_member ? "_ZNK" : "_ZN") + "4absl" +
         std::to_string(std::strlen(inline_namespace)) + inline_namespace +
         member;
}

// The definition that this executable's one hides: the next one in the
// lookup order, libabsl_synchronization.so's. A missing symbol is fatal at
// once (a silently missing edge would show as a false race much later).
template <typename Function>
Function Real(const char* member, bool const_member = false) {
  const std::string name = AbslSymbol(member, const_member);
  void* symbol = dlsym(RTLD_NEXT, name.c_str());
  if (symbol == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found: %s\n", name.c_str(),
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Function>(symbol);
}

// A Condition evaluated as if under the mutex: whichever thread evaluates
// it (the waiter, or the one unlocking) acquires what the mutex's holders
// released, and releases its own reads for the waiter that resumes.
struct AnnotatedCondition {
  const absl::Condition* condition;
  absl::Mutex* mutex;
};

// Not instrumented itself: it reads the waiter's AnnotatedCondition before
// it can acquire anything (the condition it calls is instrumented).
__attribute__((no_sanitize("thread"))) bool EvalAnnotated(void* arg) {
  const auto* annotated = static_cast<const AnnotatedCondition*>(arg);
  __tsan_acquire(annotated->mutex);
  const bool result = annotated->condition->Eval();
  __tsan_release(annotated->mutex);
  return result;
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// --- Mutex: taking it acquires, giving it up releases.

void Mutex::Lock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::Unlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

bool Mutex::TryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::ReaderLock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderUnlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

bool Mutex::ReaderTryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

// --- Mutex with a Condition: held on return (also after a timeout).

void Mutex::LockWhen(const Condition& cond) {
  static const auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex8LockWhenERKNS0_9ConditionE");
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&EvalAnnotated, &annotated));
  __tsan_acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&EvalAnnotated, &annotated));
  __tsan_acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  AnnotatedCondition annotated{&cond, this};
  const bool result = real(this, Condition(&EvalAnnotated, &annotated), timeout);
  __tsan_acquire(this);
  return result;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  AnnotatedCondition annotated{&cond, this};
  const bool result =
      real(this, Condition(&EvalAnnotated, &annotated), deadline);
  __tsan_acquire(this);
  return result;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  AnnotatedCondition annotated{&cond, this};
  const bool result = real(this, Condition(&EvalAnnotated, &annotated), timeout);
  __tsan_acquire(this);
  return result;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  AnnotatedCondition annotated{&cond, this};
  const bool result =
      real(this, Condition(&EvalAnnotated, &annotated), deadline);
  __tsan_acquire(this);
  return result;
}

// --- Await: gives the mutex up while waiting, holds it again on return.

void Mutex::Await(const Condition& cond) {
  static const auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex5AwaitERKNS0_9ConditionE");
  AnnotatedCondition annotated{&cond, this};
  __tsan_release(this);
  real(this, Condition(&EvalAnnotated, &annotated));
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  AnnotatedCondition annotated{&cond, this};
  __tsan_release(this);
  const bool result = real(this, Condition(&EvalAnnotated, &annotated), timeout);
  __tsan_acquire(this);
  return result;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  AnnotatedCondition annotated{&cond, this};
  __tsan_release(this);
  const bool result =
      real(this, Condition(&EvalAnnotated, &annotated), deadline);
  __tsan_acquire(this);
  return result;
}

// --- CondVar: the wait gives `mu` up and takes it again. Signal orders
// nothing by itself (the mutex does), so it is left alone.

void CondVar::Wait(Mutex* mu) {
  static const auto real =
      Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  real(this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

// --- Notification: Notify releases on the flag's address; every way of
// seeing the flag set (the waits here, the inline HasBeenNotified's
// acquire load) acquires from it.

void Notification::Notify() {
  static const auto real =
      Real<void (*)(Notification*)>("12Notification6NotifyEv");
  __tsan_release(&notified_yet_);
  real(this);
}

void Notification::WaitForNotification() const {
  static const auto real = Real<void (*)(const Notification*)>(
      "12Notification19WaitForNotificationEv", /*const_member=*/true);
  real(this);
  __tsan_acquire(const_cast<std::atomic<bool>*>(&notified_yet_));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static const auto real = Real<bool (*)(const Notification*, Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE",
      /*const_member=*/true);
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<std::atomic<bool>*>(&notified_yet_));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static const auto real = Real<bool (*)(const Notification*, Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE",
      /*const_member=*/true);
  const bool notified = real(this, deadline);
  if (notified) __tsan_acquire(const_cast<std::atomic<bool>*>(&notified_yet_));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
