// The CUDA execution model on one CPU thread, for the emulated build of the
// kernels (entrograd_cuda_emulated): the blocks of a grid run one after
// another, and the threads of a block run as user-space fibers that switch
// only at barriers. So shared memory can be plain storage (one block at a
// time), atomics are plain read-modify-writes (nothing preempts a fiber),
// and a __syncthreads() is "run every other thread of the block up to its
// barrier". Each round of a block resumes its threads in index order (or
// the reverse, with ENTROGRAD_CUDA_EMULATION_REVERSE_THREADS=1), so a
// missing barrier shows up as a deterministic wrong result. A thread that
// arrives at a barrier switches straight to the next thread of the round.
//
// Rules the emulator checks, failing the launch with cudaErrorLaunchFailure
// and a message on stderr: every thread of a block reaches every barrier (a
// thread that has returned while others wait is an error, as is waiting at
// different kinds of barrier), and whatever KernelError reports (the
// collectives' own rules).
//
// Thread safety: launches from several host threads are serialised.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_BLOCK_RUNNER_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_BLOCK_RUNNER_H_

#include <cuda_runtime_api.h>  // cudaError_t, dim3, uint3

#include <cstdint>
#include <string>

// The built-in index variables of CUDA, set for the running thread before
// the scheduler resumes it.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

namespace entrograd::cuda_emulation {

// What every emulated thread of a launch runs: run(context).
struct ThreadBody {
  void (*run)(void* context);
  void* context;
};

// Runs `body` for every thread of every block of the grid and returns when
// all have finished. Errors: cudaErrorInvalidConfiguration for a shape CUDA
// would refuse; cudaErrorLaunchFailure when a kernel broke a rule above
// (the message goes to stderr). Neither is recorded as the last error: the
// caller (Launch) does that.
cudaError_t RunGrid(dim3 grid, dim3 block, ThreadBody body);

// The barriers a block's threads wait at: __syncthreads() itself, and the
// ones the emulated warp shuffles and block scans use internally.
enum class BarrierKind { kSyncThreads, kShuffle, kBlockScan };

// Work done once when every thread of the block has arrived at a barrier,
// before any continues: how a collective combines what the threads brought
// (run(argument) on the scheduler's stack, with no thread index set).
struct BarrierAction {
  void (*run)(void* argument) = nullptr;
  void* argument = nullptr;
};

// Suspends the calling emulated thread until every thread of its block has
// arrived at a barrier of the same kind (and action), then runs the action.
void BlockBarrier(BarrierKind kind, BarrierAction on_complete = {});

// threadIdx as one number, x fastest, and the threads in the block.
unsigned LinearThreadIndex();
unsigned BlockThreadCount();

// Distinct for every block run since the process started (never 0).
uint64_t BlockSerial();
// The __syncthreads() barriers the running block has completed.
uint64_t SyncThreadsCompleted();

// Fails the running launch with `message` (naming the block and thread).
// The calling emulated thread never continues. Only valid inside a kernel.
[[noreturn]] void KernelError(const std::string& message);

}  // namespace entrograd::cuda_emulation

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_BLOCK_RUNNER_H_
