// Keeps the memory a training step frees in the process, for the next step.
//
// Why: a LibTorch step allocates and frees the same few-megabyte buffers
// (activations, their gradients, convolution workspaces) every step. With
// glibc's defaults, blocks above the mmap threshold are mapped and unmapped
// each time, and the top of the heap is trimmed back to the kernel whenever
// 128 KiB or more is free there; either way every page of the next step's
// buffers is faulted in and zeroed again. On the Fashion-MNIST CNN (batch
// 64, one thread) that is about a third of forward/backward (93 ms against
// 60 ms per step, docs/BENCHMARKS.md), and how much of it a process pays
// depends on its allocation history: a Python loop and a C++ loop of the
// same model differed by 15-30% for this reason alone.
//
// RetainFreedMemory() raises glibc's mmap threshold to its maximum (32 MiB)
// and stops heap trimming, as jemalloc or tcmalloc (which PyTorch's
// performance guide suggests for the same reason) would: blocks up to 32 MiB
// are reused from the heap, larger ones are still mapped. The cost is that
// the process keeps its peak heap: resident memory no longer shrinks after
// a step, which for a training job that repeats the same step is the point.
//
// Errors: FAILED_PRECONDITION when the C library refuses either setting
// (a libc other than glibc, or a threshold glibc does not accept); nothing
// is changed then beyond what was accepted.
// Thread safety: call once at start-up, before the training threads
// allocate; it changes process-wide allocator settings.
#ifndef ENTROGRAD_TORCH_RETAIN_FREED_MEMORY_H_
#define ENTROGRAD_TORCH_RETAIN_FREED_MEMORY_H_

#include "absl/status/status.h"

namespace entrograd {

absl::Status RetainFreedMemory();

}  // namespace entrograd

#endif  // ENTROGRAD_TORCH_RETAIN_FREED_MEMORY_H_
