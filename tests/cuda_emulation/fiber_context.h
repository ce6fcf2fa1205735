// A fiber's saved flow of control, and the switch between two of them: the
// one primitive of the emulator's scheduler (block_runner.cc) that depends
// on the machine. On x86-64 a switch saves the six callee-saved registers
// and the stack pointer, a few nanoseconds; a block of 256 threads switches
// twice per thread per barrier, and the kernels cross barriers in every
// tile. Elsewhere, or when the compiler protects control flow (CET shadow
// stacks, which a hand-made switch would break), it is ucontext's
// makecontext/swapcontext: portable, about 200 ns a switch.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_FIBER_CONTEXT_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_FIBER_CONTEXT_H_

#include <cstddef>

#if defined(__x86_64__) && !defined(__CET__)
#define ENTROGRAD_CUDA_EMULATION_STACK_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace entrograd::cuda_emulation {

struct FiberContext {
#ifdef ENTROGRAD_CUDA_EMULATION_STACK_SWITCH
  void* stack_pointer = nullptr;  // the saved registers sit on that stack
#else
  ucontext_t context;
#endif
};

// Prepares *context so that the first switch to it calls entry() on the
// `bytes` of `stack`. entry must never return.
void MakeFiberContext(FiberContext* context, char* stack, size_t bytes,
                      void (*entry)());

// Saves the running flow of control in *from and continues *to; returns
// when something switches back to *from.
void SwitchFiberContext(FiberContext* from, FiberContext* to);

}  // namespace entrograd::cuda_emulation

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_FIBER_CONTEXT_H_
