// The scheduler of the emulated threads (block_runner.h): each emulated
// thread is a fiber on its own small stack, and the host thread that
// launches a kernel runs the scheduler, which resumes the fibers of a block
// round by round until all have finished.
#include "cuda_emulation/block_runner.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_emulation/fiber_context.h"

uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace entrograd::cuda_emulation {
namespace {

// Kernel frames are small; 128 KiB leaves room for a printf in a kernel.
// A guard page below each stack turns an overflow into a crash, not a
// silent corruption of the next stack.
constexpr size_t kStackBytes = 128 * 1024;
constexpr unsigned kMaxBlockThreads = 1024;

enum class FiberState { kReady, kAtBarrier, kFinished, kFailed };

struct Fiber {
  FiberContext context;     // where the next switch to it continues
  char* mapping = nullptr;  // guard page, then the stack
  bool idle = true;         // between bodies, not inside a kernel
  FiberState state = FiberState::kFinished;
  BarrierKind barrier = BarrierKind::kSyncThreads;
  BarrierAction action;
};

struct Scheduler {
  std::mutex mutex;  // one launch at a time: the fibers and builtins are global
  std::vector<std::unique_ptr<Fiber>> fibers;  // grows to the largest block
  std::vector<Fiber*> block;                   // the running block's fibers
  FiberContext scheduler_context;
  Fiber* current = nullptr;  // the running fiber, null on the host
  Fiber* starting = nullptr;
  ThreadBody body{};
  unsigned block_threads = 0;
  unsigned round_position = 0;  // next place in the round's thread order
  bool reverse_order = false;
  bool one_dimensional = true;
  bool failed = false;
  uint64_t block_serial = 0;
  uint64_t syncthreads_completed = 0;
  std::string error;
};
// A global, not a function-local static, so that the hot paths (a switch
// per thread per barrier) test no guard variable; never destroyed.
Scheduler& scheduler = *new Scheduler;

bool ReverseThreadOrder() {
  static const bool reverse = [] {
    const char* value = std::getenv("ENTROGRAD_CUDA_EMULATION_REVERSE_THREADS");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return reverse;
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "cuda_emulation: %s\n", what);
  std::abort();
}

void SetThreadIndex(unsigned linear) {
  if (scheduler.one_dimensional) {  // no divisions on the common path
    threadIdx = uint3{linear, 0, 0};
    return;
  }
  threadIdx.x = linear % blockDim.x;
  threadIdx.y = linear / blockDim.x % blockDim.y;
  threadIdx.z = linear / (blockDim.x * blockDim.y);
}

// The next ready fiber of the round, made current; null at the round's end.
Fiber* NextInRound() {
  Scheduler& s = scheduler;
  while (s.round_position < s.block_threads) {
    const unsigned i = s.round_position++;
    const unsigned t = s.reverse_order ? s.block_threads - 1 - i : i;
    Fiber* fiber = s.block[t];
    if (fiber->state == FiberState::kReady) {
      SetThreadIndex(t);
      s.current = fiber;
      return fiber;
    }
  }
  s.current = nullptr;
  return nullptr;
}

// Leaves the calling fiber (its state already set) for the next fiber of
// the round, or for the scheduler when the round is over: one switch.
void YieldToNext(Fiber* self) {
  Fiber* next = NextInRound();
  SwitchFiberContext(&self->context, next != nullptr
                                         ? &next->context
                                         : &scheduler.scheduler_context);
}

// Every fiber loops: run the body, finish, let the round go on; a later
// block resumes it at the top of the loop.
void FiberMain() {
  Fiber* self = scheduler.starting;
  SwitchFiberContext(&self->context, &scheduler.scheduler_context);  // parked
  for (;;) {
    self->idle = false;
    scheduler.body.run(scheduler.body.context);
    self->state = FiberState::kFinished;
    self->idle = true;
    YieldToNext(self);
  }
}

// (Re)starts `fiber` on a fresh stack, parked at the top of FiberMain.
void Start(Fiber* fiber) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (fiber->mapping == nullptr) {
    void* mapping = mmap(nullptr, page + kStackBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) Die("cannot map a fiber stack");
    if (mprotect(mapping, page, PROT_NONE) != 0) Die("cannot guard a stack");
    fiber->mapping = static_cast<char*>(mapping);
  }
  MakeFiberContext(&fiber->context, fiber->mapping + page, kStackBytes,
                   FiberMain);
  scheduler.starting = fiber;
  SwitchFiberContext(&scheduler.scheduler_context, &fiber->context);
  fiber->idle = true;
  fiber->state = FiberState::kFinished;
}

void EnsureFibers(unsigned count) {
  while (scheduler.fibers.size() < count) {
    scheduler.fibers.push_back(std::make_unique<Fiber>());
    Start(scheduler.fibers.back().get());
  }
}

std::string Where(unsigned linear) {
  return "block (" + std::to_string(blockIdx.x) + "," +
         std::to_string(blockIdx.y) + "," + std::to_string(blockIdx.z) +
         "), thread " + std::to_string(linear);
}

const char* BarrierName(BarrierKind kind) {
  switch (kind) {
    case BarrierKind::kSyncThreads:
      return "__syncthreads()";
    case BarrierKind::kShuffle:
      return "a warp shuffle";
    case BarrierKind::kBlockScan:
      return "a cub::BlockScan";
  }
  return "?";
}

// A kernel's out-of-bounds access, cudaErrorIllegalAddress on a GPU, is a
// SIGSEGV or SIGBUS here: the handler names the block and thread that made
// it, then lets the signal take its course. Only async-signal-safe calls.
struct sigaction previous_segv;
struct sigaction previous_bus;

void AppendNumber(char** out, unsigned value) {
  char digits[10];
  int count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (count > 0) *(*out)++ = digits[--count];
}

void AppendText(char** out, const char* text) {
  while (*text != '\0') *(*out)++ = *text++;
}

void ReportFault(int signal_number) {
  if (scheduler.current != nullptr) {
    char message[256];
    char* out = message;
    AppendText(&out,
               "cuda_emulation: memory fault (cudaErrorIllegalAddress on a "
               "GPU) in a kernel, block (");
    AppendNumber(&out, blockIdx.x);
    AppendText(&out, ",");
    AppendNumber(&out, blockIdx.y);
    AppendText(&out, ",");
    AppendNumber(&out, blockIdx.z);
    AppendText(&out, "), thread (");
    AppendNumber(&out, threadIdx.x);
    AppendText(&out, ",");
    AppendNumber(&out, threadIdx.y);
    AppendText(&out, ",");
    AppendNumber(&out, threadIdx.z);
    AppendText(&out, ")\n");
    const ssize_t ignored = write(STDERR_FILENO, message, out - message);
    (void)ignored;
  }
  sigaction(signal_number,
            signal_number == SIGSEGV ? &previous_segv : &previous_bus, nullptr);
  raise(signal_number);
}

// Once per host thread that launches kernels: an alternate signal stack
// (a fault may be a fiber's stack overflowing into its guard page), and
// the handler.
void InstallFaultReporter() {
  thread_local bool installed = false;
  if (installed) return;
  installed = true;
  stack_t alternate{};
  alternate.ss_size = 64 * 1024;
  alternate.ss_sp = std::malloc(alternate.ss_size);
  if (alternate.ss_sp == nullptr || sigaltstack(&alternate, nullptr) != 0) {
    return;  // no report, the fault still ends the process
  }
  struct sigaction action {};
  action.sa_handler = ReportFault;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  static std::once_flag once;
  std::call_once(once, [&] {
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
  });
}

// Runs the current block to the end. False (with the error set) when a
// thread failed or the threads did not meet at their barriers.
bool RunBlock() {
  Scheduler& s = scheduler;
  const unsigned n = s.block_threads;
  Fiber* const* block = s.block.data();
  for (unsigned t = 0; t < n; ++t) block[t]->state = FiberState::kReady;
  ++s.block_serial;
  s.syncthreads_completed = 0;
  for (;;) {
    s.round_position = 0;
    if (Fiber* first = NextInRound(); first != nullptr) {
      SwitchFiberContext(&s.scheduler_context, &first->context);
    }
    if (s.failed) return false;
    // Every thread has finished or waits at a barrier.
    const Fiber* waiter = nullptr;
    unsigned waiter_index = 0;
    unsigned finished = 0;
    unsigned finisher_index = 0;
    for (unsigned t = 0; t < n; ++t) {
      const Fiber* fiber = block[t];
      if (fiber->state == FiberState::kFinished) {
        if (finished++ == 0) finisher_index = t;
        continue;
      }
      if (waiter == nullptr) {
        waiter = fiber;
        waiter_index = t;
      } else if (fiber->barrier != waiter->barrier) {
        s.error = Where(t) + " waits at " + BarrierName(fiber->barrier) +
                  ", thread " + std::to_string(waiter_index) + " at " +
                  BarrierName(waiter->barrier) +
                  ": the threads of a block must meet at one barrier";
        return false;
      } else if (fiber->action.run != waiter->action.run ||
                 fiber->action.argument != waiter->action.argument) {
        s.error = Where(t) + " and thread " + std::to_string(waiter_index) +
                  " wait at " + BarrierName(fiber->barrier) +
                  " on different data";
        return false;
      }
    }
    if (waiter == nullptr) return true;
    if (finished != 0) {
      s.error = Where(finisher_index) + " has returned while thread " +
                std::to_string(waiter_index) + " waits at " +
                BarrierName(waiter->barrier) +
                ": every thread of a block must reach every barrier";
      return false;
    }
    if (waiter->barrier == BarrierKind::kSyncThreads) {
      ++s.syncthreads_completed;
    }
    if (waiter->action.run != nullptr) {
      waiter->action.run(waiter->action.argument);
    }
    for (unsigned t = 0; t < n; ++t) block[t]->state = FiberState::kReady;
  }
}

// After a failed block: fibers stopped inside the kernel start afresh.
void ResetStoppedFibers() {
  for (auto& fiber : scheduler.fibers) {
    if (!fiber->idle) Start(fiber.get());
  }
}

}  // namespace

cudaError_t RunGrid(dim3 grid, dim3 block, ThreadBody body) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > kMaxBlockThreads || block.z > 64 ||
      grid.x == 0 || grid.x > 0x7FFFFFFFu || grid.y == 0 || grid.y > 65535 ||
      grid.z == 0 || grid.z > 65535) {
    return cudaErrorInvalidConfiguration;
  }
  Scheduler& s = scheduler;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.current != nullptr) Die("a kernel launched another kernel");
  InstallFaultReporter();
  EnsureFibers(static_cast<unsigned>(threads));
  gridDim = grid;
  blockDim = block;
  s.body = body;
  s.block_threads = static_cast<unsigned>(threads);
  s.reverse_order = ReverseThreadOrder();
  s.one_dimensional = block.y == 1 && block.z == 1;
  s.block.clear();
  for (unsigned t = 0; t < threads; ++t) s.block.push_back(s.fibers[t].get());
  s.failed = false;
  s.error.clear();
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = uint3{x, y, z};
        if (!RunBlock()) {
          std::fprintf(stderr, "cuda_emulation: kernel failed: %s\n",
                       s.error.c_str());
          ResetStoppedFibers();
          s.failed = false;
          return cudaErrorLaunchFailure;
        }
      }
    }
  }
  return cudaSuccess;
}

void BlockBarrier(BarrierKind kind, BarrierAction on_complete) {
  Fiber* self = scheduler.current;
  if (self == nullptr) Die("a barrier outside a kernel");
  self->state = FiberState::kAtBarrier;
  self->barrier = kind;
  self->action = on_complete;
  YieldToNext(self);
}

unsigned LinearThreadIndex() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

unsigned BlockThreadCount() { return scheduler.block_threads; }

uint64_t BlockSerial() { return scheduler.block_serial; }

uint64_t SyncThreadsCompleted() { return scheduler.syncthreads_completed; }

void KernelError(const std::string& message) {
  Fiber* self = scheduler.current;
  if (self == nullptr) Die(message.c_str());
  scheduler.error = Where(LinearThreadIndex()) + ": " + message;
  scheduler.failed = true;
  self->state = FiberState::kFailed;
  // Straight back to the scheduler, which ends the launch; never resumed
  // (RunGrid restarts the fiber).
  scheduler.current = nullptr;
  SwitchFiberContext(&self->context, &scheduler.scheduler_context);
  Die("a failed emulated thread was resumed");
}

}  // namespace entrograd::cuda_emulation
