// RetainFreedMemory (entrograd/torch/retain_freed_memory.h): after it, glibc
// serves blocks up to 32 MiB from the heap and keeps the heap when they are
// freed; before it, the same blocks are mapped and the heap is trimmed. The
// settings are process-wide, so this test is a binary of its own and looks
// at glibc's own counters (mallinfo2) rather than at timings.
#include "entrograd/torch/retain_freed_memory.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "gtest/gtest.h"

namespace entrograd {
namespace {

// Called through volatile pointers, so the compiler cannot pair a malloc
// with its free and drop both.
void* (*volatile allocate)(size_t) = std::malloc;
void (*volatile release)(void*) = std::free;

constexpr size_t kMiB = size_t{1} << 20;

// Allocates and touches `bytes`; returns the block and how many more mapped
// blocks glibc holds than before.
void* AllocateTouched(size_t bytes, long* new_mapped_blocks) {
  const size_t mapped_before = mallinfo2().hblks;
  void* block = allocate(bytes);
  std::memset(block, 1, bytes);
  *new_mapped_blocks =
      static_cast<long>(mallinfo2().hblks) - static_cast<long>(mapped_before);
  return block;
}

TEST(RetainFreedMemoryTest, KeepsStepSizedBlocksOnTheHeapAndTheHeapAfterFree) {
  // glibc's defaults first: a 4 MiB block is mapped. Freeing it raises the
  // dynamic mmap threshold to 4 MiB and the trim threshold to 8 MiB.
  long mapped = 0;
  void* block = AllocateTouched(4 * kMiB, &mapped);
  EXPECT_EQ(mapped, 1) << "glibc's default maps a 4 MiB block";
  release(block);

  ASSERT_TRUE(RetainFreedMemory().ok());

  // 16 MiB: above the dynamic threshold glibc had reached, below 32 MiB.
  block = AllocateTouched(16 * kMiB, &mapped);
  EXPECT_EQ(mapped, 0) << "a 16 MiB block must come from the heap";
  const size_t heap_with_block = mallinfo2().arena;
  release(block);
  // Without the setting, 16 MiB free at the top (over the 8 MiB trim
  // threshold) would be given back to the kernel at once.
  EXPECT_GE(mallinfo2().arena, heap_with_block)
      << "the heap was trimmed after free";

  // The next step's block of the same size reuses those pages.
  block = AllocateTouched(16 * kMiB, &mapped);
  EXPECT_EQ(mapped, 0);
  EXPECT_EQ(mallinfo2().arena, heap_with_block) << "the heap grew again";
  release(block);

  // Beyond glibc's 32 MiB maximum, blocks are still mapped.
  block = AllocateTouched(64 * kMiB, &mapped);
  EXPECT_EQ(mapped, 1);
  release(block);
}

TEST(RetainFreedMemoryTest, CanBeCalledAgain) {
  EXPECT_TRUE(RetainFreedMemory().ok());
  EXPECT_TRUE(RetainFreedMemory().ok());
}

}  // namespace
}  // namespace entrograd
