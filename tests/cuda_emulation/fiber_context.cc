#include "cuda_emulation/fiber_context.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#ifdef ENTROGRAD_CUDA_EMULATION_STACK_SWITCH

// entrograd_cuda_emulation_switch(void** save, void* load): pushes
// the callee-saved registers of the System V ABI, stores the stack pointer
// in *save, loads `load` and pops the registers saved there. The return
// address is on the stack, so `ret` continues the other flow. The x87 and
// SSE control words are callee-saved too, but fibers never change them.
asm(R"(
  .text
  .p2align 4
  .globl entrograd_cuda_emulation_switch
  .hidden entrograd_cuda_emulation_switch
  .type entrograd_cuda_emulation_switch, @function
entrograd_cuda_emulation_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size entrograd_cuda_emulation_switch, .-entrograd_cuda_emulation_switch
)");

extern "C" void entrograd_cuda_emulation_switch(void** save, void* load);

namespace entrograd::cuda_emulation {

void MakeFiberContext(FiberContext* context, char* stack, size_t bytes,
                      void (*entry)()) {
  // What the switch pops, as if the fiber had switched away at entry's
  // first instruction: six registers, then entry as the return address,
  // then a null return address for entry itself, which leaves the stack
  // pointer 8 past a 16-byte boundary at entry, as a call would.
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t{15};
  void** frame = reinterpret_cast<void**>(top);
  *--frame = nullptr;
  *--frame = reinterpret_cast<void*>(entry);
  for (int i = 0; i < 6; ++i) *--frame = nullptr;
  context->stack_pointer = frame;
}

void SwitchFiberContext(FiberContext* from, FiberContext* to) {
  entrograd_cuda_emulation_switch(&from->stack_pointer, to->stack_pointer);
}

}  // namespace entrograd::cuda_emulation

#else  // ucontext

namespace entrograd::cuda_emulation {

void MakeFiberContext(FiberContext* context, char* stack, size_t bytes,
                      void (*entry)()) {
  if (getcontext(&context->context) != 0) {
    std::fprintf(stderr, "cuda_emulation: getcontext failed\n");
    std::abort();
  }
  context->context.uc_stack.ss_sp = stack;
  context->context.uc_stack.ss_size = bytes;
  context->context.uc_link = nullptr;
  makecontext(&context->context, entry, 0);
}

void SwitchFiberContext(FiberContext* from, FiberContext* to) {
  swapcontext(&from->context, &to->context);
}

}  // namespace entrograd::cuda_emulation

#endif
