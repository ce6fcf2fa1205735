// ThreadSanitizer and the system gRPC. libgrpc and libgrpc++ are not
// instrumented, so TSan does not see the hand-overs that run through their
// own lock-free queues and reference counts. This file, linked into each
// test binary of a TSan build only (tests/CMakeLists.txt), adds three edges.
//
// A batch and its completion: everything a thread did before it started a
// batch of operations on a call (grpc_call_start_batch: a read into our
// message, a write of it) happens before that batch's completion is
// returned by grpc_completion_queue_next / _pluck on another thread (the
// synchronous client API's streams wait on those): start_batch releases on
// the batch's tag, next and pluck acquire on the tag they return.
//
// A server call and its OnDone: gRPC runs the reactor's OnDone, and then
// destroys the call's handler state, once every reaction of the call has
// finished (ServerCallbackCall counts them down in callbacks_outstanding_),
// on an executor thread (ServerCallbackCall::ScheduleOnDone). The last count
// may be dropped inside libgrpc++ and the executor's queue is gRPC's own, so
// neither half of that order is visible. ScheduleOnDone below acquires what
// every instrumented count-down released on the counter, and hands the
// real one an OnDoneHop in place of the call (the real ScheduleOnDone does
// nothing with its object but call CallOnDone on it): the hop's CallOnDone,
// instrumented, acquires on the executor thread what ScheduleOnDone
// released, then runs the call's.
//
// A server's calls and its Shutdown: Server::Shutdown returns only once
// every callback call has dropped its reference to the server, which each
// does at the end of CallOnDone, after the reactor's OnDone (entrograd then
// destroys what OnDone used: the job registry). The count is an atomic in
// libgrpc++, so UnrefWithPossibleNotify releases on the server and
// UnrefAndWaitLocked, Shutdown's wait for that count, acquires on return.
//
// Each wrapper calls the real function, found with dlsym(RTLD_NEXT) in
// libgrpc.so or libgrpc++.so; the libraries reach these definitions because
// the executable exports them (tsan_interposers.dynamic_list).
#include <dlfcn.h>
#include <grpc/grpc.h>
#include <grpcpp/server.h>
#include <grpcpp/support/server_callback.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

namespace {

// The library's definition of `name` (a C name or a mangled C++ one), which
// this executable's hides. A missing symbol is fatal at once.
template <typename Function>
Function RealGrpc(const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "tsan_grpc_sync: %s not found: %s\n", name,
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Function>(symbol);
}

}  // namespace

extern "C" {

grpc_call_error grpc_call_start_batch(grpc_call* call, const grpc_op* ops,
                                      size_t nops, void* tag, void* reserved) {
  static const auto real =
      RealGrpc<decltype(&grpc_call_start_batch)>("grpc_call_start_batch");
  __tsan_release(tag);
  return real(call, ops, nops, tag, reserved);
}

grpc_event grpc_completion_queue_next(grpc_completion_queue* cq,
                                      gpr_timespec deadline, void* reserved) {
  static const auto real = RealGrpc<decltype(&grpc_completion_queue_next)>(
      "grpc_completion_queue_next");
  const grpc_event event = real(cq, deadline, reserved);
  if (event.type == GRPC_OP_COMPLETE) __tsan_acquire(event.tag);
  return event;
}

grpc_event grpc_completion_queue_pluck(grpc_completion_queue* cq, void* tag,
                                       gpr_timespec deadline, void* reserved) {
  static const auto real = RealGrpc<decltype(&grpc_completion_queue_pluck)>(
      "grpc_completion_queue_pluck");
  const grpc_event event = real(cq, tag, deadline, reserved);
  if (event.type == GRPC_OP_COMPLETE) __tsan_acquire(event.tag);
  return event;
}

}  // extern "C"

namespace grpc {
namespace internal {
namespace {

// What the real ScheduleOnDone hands to the executor in place of the call:
// on the executor thread it acquires what ScheduleOnDone released, runs the
// call's CallOnDone (private to ServerCallbackCall, hence the member
// pointer taken in ScheduleOnDone), and frees itself.
class OnDoneHop final : public ServerCallbackCall {
 public:
  using CallOnDoneMember = void (ServerCallbackCall::*)();
  OnDoneHop(ServerCallbackCall* call, CallOnDoneMember call_on_done)
      : call_(call), call_on_done_(call_on_done) {}

 private:
  ServerReactor* reactor() override { return nullptr; }  // never asked

  void CallOnDone() override {
    __tsan_acquire(call_);
    (call_->*call_on_done_)();
    delete this;
  }

  ServerCallbackCall* const call_;
  const CallOnDoneMember call_on_done_;
};

}  // namespace

void ServerCallbackCall::ScheduleOnDone(bool inline_ondone) {
  static const auto real = RealGrpc<void (*)(ServerCallbackCall*, bool)>(
      "_ZN4grpc8internal18ServerCallbackCall14ScheduleOnDoneEb");
  __tsan_acquire(&callbacks_outstanding_);
  if (inline_ondone) {
    CallOnDone();
    return;
  }
  __tsan_release(this);
  real(new OnDoneHop(this, &ServerCallbackCall::CallOnDone),
       /*inline_ondone=*/false);
}

}  // namespace internal
}  // namespace grpc

namespace grpc {

void Server::UnrefWithPossibleNotify() {
  static const auto real = RealGrpc<void (*)(Server*)>(
      "_ZN4grpc6Server23UnrefWithPossibleNotifyEv");
  __tsan_release(this);
  real(this);
}

void Server::UnrefAndWaitLocked() {
  static const auto real =
      RealGrpc<void (*)(Server*)>("_ZN4grpc6Server18UnrefAndWaitLockedEv");
  __tsan_release(this);
  real(this);
  __tsan_acquire(this);
}

}  // namespace grpc
