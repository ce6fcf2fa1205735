// The CUDA emulator against CUDA's semantics: indices, barriers, shuffles,
// scans, atomics and selection give what a GPU gives, and the rules the
// emulator checks (every thread at every barrier, a __syncthreads() between
// two uses of a scan's storage, launch shapes, memory ranges) fail the way
// the emulator promises. The kernels here are small and written as CUDA.
// They include CUDA's header names, as the kernels do: the emulator's
// include path (shim/) supplies its own.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <cstring>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_select.cuh>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace entrograd::cuda_emulation {
namespace {

// Launch plus the error it left behind, read and cleared as after <<<>>>.
template <typename... Params, typename... Args>
cudaError_t LaunchNow(void (*kernel)(Params...), dim3 grid, dim3 block,
                      Args&&... args) {
  const cudaError_t launch =
      Launch(kernel, grid, block, nullptr, std::forward<Args>(args)...);
  const cudaError_t last = cudaGetLastError();
  EXPECT_EQ(launch, last) << "a launch error is also the last error";
  return launch;
}

// --- Indices. ----------------------------------------------------------------

__global__ void RecordIndices(uint32_t* out) {
  const unsigned block =
      blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  uint32_t* slot = out + 4 * (block * threads + thread);
  slot[0] = threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16;
  slot[1] = blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16;
  slot[2] = blockDim.x | blockDim.y << 8 | blockDim.z << 16;
  slot[3] = gridDim.x | gridDim.y << 8 | gridDim.z << 16;
}

TEST(EmulatorTest, EveryThreadOfEveryBlockSeesItsIndices) {
  const dim3 grid(3, 2, 2);
  const dim3 block(4, 3, 2);
  std::vector<uint32_t> out(4 * 12 * 24, 0xFFFFFFFFu);
  ASSERT_EQ(LaunchNow(RecordIndices, grid, block, out.data()), cudaSuccess);
  size_t i = 0;
  for (unsigned bz = 0; bz < 2; ++bz) {
    for (unsigned by = 0; by < 2; ++by) {
      for (unsigned bx = 0; bx < 3; ++bx) {
        for (unsigned tz = 0; tz < 2; ++tz) {
          for (unsigned ty = 0; ty < 3; ++ty) {
            for (unsigned tx = 0; tx < 4; ++tx, i += 4) {
              EXPECT_EQ(out[i], tx | ty << 8 | tz << 16);
              EXPECT_EQ(out[i + 1], bx | by << 8 | bz << 16);
              EXPECT_EQ(out[i + 2], 4u | 3u << 8 | 2u << 16);
              EXPECT_EQ(out[i + 3], 3u | 2u << 8 | 2u << 16);
            }
          }
        }
      }
    }
  }
}

// Each thread gets its own copy of the (converted) arguments.
__global__ void ChangeOwnArgument(uint64_t value, uint64_t* out) {
  value += threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = value;
}

TEST(EmulatorTest, ArgumentsAreConvertedAndCopiedPerThread) {
  std::vector<uint64_t> out(64);
  ASSERT_EQ(LaunchNow(ChangeOwnArgument, 1, 64, 1000, out.data()), cudaSuccess);
  for (uint64_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], 1000 + t);
}

// The kernels launch through CUDA's own cudaLaunchKernelEx, which the shim's
// cuda_runtime.h runs on the emulator; what it cannot emulate it refuses.
TEST(EmulatorTest, LaunchKernelExRunsTheKernelAndRefusesDynamicSharedMemory) {
  std::vector<uint64_t> out(32);
  cudaLaunchConfig_t config = {};
  config.gridDim = 1;
  config.blockDim = 32;
  ASSERT_EQ(cudaLaunchKernelEx(&config, ChangeOwnArgument, 7, out.data()),
            cudaSuccess);
  for (uint64_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], 7 + t);
  config.dynamicSmemBytes = 1024;
  EXPECT_EQ(cudaLaunchKernelEx(&config, ChangeOwnArgument, 7, out.data()),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

// --- Barriers and shared memory. ---------------------------------------------

__global__ void RotateThroughShared(const int* in, int* out) {
  __shared__ int values[128];
  values[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = values[(threadIdx.x + 1) % 128];
}

TEST(EmulatorTest, SyncThreadsMakesEveryWriteVisible) {
  std::vector<int> in(3 * 128);
  std::iota(in.begin(), in.end(), 0);
  std::vector<int> out(in.size());
  ASSERT_EQ(LaunchNow(RotateThroughShared, 3, 128, in.data(), out.data()),
            cudaSuccess);
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 128; ++t) {
      EXPECT_EQ(out[b * 128 + t], b * 128 + (t + 1) % 128);
    }
  }
}

// Without the barrier, thread t reads its neighbour's slot before the
// neighbour (resumed later in the round) wrote it: the race shows.
__global__ void RotateWithoutBarrier(const int* in, int* out) {
  __shared__ int values[128];
  values[threadIdx.x] = in[threadIdx.x];
  out[threadIdx.x] = values[(threadIdx.x + 1) % 128];
}

TEST(EmulatorTest, AMissingBarrierGivesWrongValues) {
  std::vector<int> in(128);
  std::iota(in.begin(), in.end(), 1000);
  std::vector<int> out(128);
  ASSERT_EQ(LaunchNow(RotateWithoutBarrier, 1, 128, in.data(), out.data()),
            cudaSuccess);
  int wrong = 0;
  for (int t = 0; t < 128; ++t) wrong += out[t] != in[(t + 1) % 128];
  EXPECT_GT(wrong, 0);
}

__global__ void ReturnEarlyThenSync(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

TEST(EmulatorTest, AThreadThatReturnsBeforeABarrierFailsTheLaunch) {
  std::vector<int> out(64);
  EXPECT_EQ(LaunchNow(ReturnEarlyThenSync, 2, 64, out.data()),
            cudaErrorLaunchFailure);
  // The next launch starts clean.
  EXPECT_EQ(LaunchNow(RotateThroughShared, 1, 128, std::vector<int>(128).data(),
                      std::vector<int>(128).data()),
            cudaSuccess);
}

__global__ void SyncOrShuffle(int* out) {
  int value = 1;
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    value = __shfl_down_sync(0xFFFFFFFFu, value, 1);
  }
  out[threadIdx.x] = value;
}

TEST(EmulatorTest, ThreadsAtDifferentBarriersFailTheLaunch) {
  std::vector<int> out(64);
  EXPECT_EQ(LaunchNow(SyncOrShuffle, 1, 64, out.data()),
            cudaErrorLaunchFailure);
}

// --- Warp shuffles. ----------------------------------------------------------

template <typename T>
__global__ void ShuffleDown(const T* in, T* out, unsigned delta, int width) {
  const unsigned t = threadIdx.x;
  out[t] = __shfl_down_sync(0xFFFFFFFFu, in[t], delta, width);
}

template <typename T>
void ExpectShuffleDown(unsigned delta, int width) {
  SCOPED_TRACE(testing::Message() << "delta " << delta << ", width " << width
                                  << ", " << sizeof(T) << " bytes");
  std::vector<T> in(96);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<T>(3 * i + 1);
  std::vector<T> out(in.size());
  ASSERT_EQ(
      LaunchNow(ShuffleDown<T>, 1, 96, in.data(), out.data(), delta, width),
      cudaSuccess);
  for (unsigned t = 0; t < 96; ++t) {
    const unsigned lane = t % 32 % static_cast<unsigned>(width);
    const T expected =
        lane + delta < static_cast<unsigned>(width) ? in[t + delta] : in[t];
    EXPECT_EQ(out[t], expected) << "thread " << t;
  }
}

TEST(EmulatorTest, ShuffleDownTakesTheLaneBelowWithinItsSegment) {
  for (unsigned delta : {0u, 1u, 2u, 16u, 31u, 32u}) {
    ExpectShuffleDown<int>(delta, 32);
    ExpectShuffleDown<unsigned>(delta, 32);
    ExpectShuffleDown<float>(delta, 32);
    ExpectShuffleDown<double>(delta, 32);
  }
  ExpectShuffleDown<int>(3, 8);
  ExpectShuffleDown<double>(1, 2);
}

// The kernels' fixed-order block sum, with its warp_sums in shared memory.
__global__ void BlockSum(const double* in, double* out) {
  __shared__ double warp_sums[8];
  double value = in[blockIdx.x * 256 + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xFFFFFFFFu, value, offset);
  }
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < 8; ++w) total += warp_sums[w];
    out[blockIdx.x] = total;
  }
}

TEST(EmulatorTest, ShuffleTreeSumsEachBlock) {
  std::vector<double> in(4 * 256);
  std::iota(in.begin(), in.end(), 0.0);
  std::vector<double> out(4);
  ASSERT_EQ(LaunchNow(BlockSum, 4, 256, in.data(), out.data()), cudaSuccess);
  for (int b = 0; b < 4; ++b) {
    const double first = 256.0 * b;
    EXPECT_EQ(out[b], 256 * first + 255.0 * 256 / 2);
  }
}

__global__ void ShuffleInAPartialWarp(int* out) {
  out[threadIdx.x] = __shfl_down_sync(0xFFFFFFFFu, 1, 4);
}

TEST(EmulatorTest, ShuffleFromALanePastTheBlockFailsTheLaunch) {
  std::vector<int> out(40);
  EXPECT_EQ(LaunchNow(ShuffleInAPartialWarp, 1, 40, out.data()),
            cudaErrorLaunchFailure);
}

// --- Atomics and intrinsics. -------------------------------------------------

__global__ void Atomics(unsigned* counts, unsigned* minimum, double* sum) {
  atomicAdd(&counts[threadIdx.x % 4], 1u);
  atomicMin(minimum, 1000u - blockIdx.x * 10 - threadIdx.x);
  atomicAdd(sum, 0.5);
}

TEST(EmulatorTest, AtomicsFromEveryThreadOfEveryBlockAddUp) {
  std::vector<unsigned> counts(4);
  unsigned minimum = 0xFFFFFFFFu;
  double sum = 0.0;
  ASSERT_EQ(LaunchNow(Atomics, 5, 64, counts.data(), &minimum, &sum),
            cudaSuccess);
  for (unsigned c : counts) EXPECT_EQ(c, 5u * 16);
  EXPECT_EQ(minimum, 1000u - 40 - 63);
  EXPECT_EQ(sum, 0.5 * 5 * 64);
}

TEST(EmulatorTest, IntrinsicsAndMixedIntegerMinMatchCuda) {
  EXPECT_EQ(__float_as_uint(-0.0f), 0x80000000u);
  EXPECT_EQ(__float_as_uint(__uint_as_float(0x7F7FFFFFu)), 0x7F7FFFFFu);
  EXPECT_EQ(__fadd_rn(1.0f, 1e-8f), 1.0f);
  EXPECT_EQ(__fmul_rn(3.0f, 0.5f), 1.5f);
  // CUDA's min(int, unsigned) is an unsigned min: -1 becomes 0xFFFFFFFF.
  EXPECT_EQ(min(-1, 1u), 1u);
  EXPECT_EQ(min(uint64_t{1} << 40, 3u), uint64_t{3});
  EXPECT_EQ(max(int64_t{-5}, 2), int64_t{2});
}

// --- cub::BlockScan. ---------------------------------------------------------

template <int kThreads>
__global__ void ScanTwice(const uint32_t* in, uint32_t* prefix,
                          uint32_t* aggregate, uint32_t* prefix_again) {
  using BlockScan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename BlockScan::TempStorage storage;
  const uint32_t value = in[blockIdx.x * kThreads + threadIdx.x];
  uint32_t total = 0;
  BlockScan(storage).ExclusiveSum(
      value, prefix[blockIdx.x * kThreads + threadIdx.x], total);
  if (threadIdx.x == 0) aggregate[blockIdx.x] = total;
  __syncthreads();
  BlockScan(storage).ExclusiveSum(
      2 * value, prefix_again[blockIdx.x * kThreads + threadIdx.x]);
}

template <int kThreads>
void ExpectScans() {
  SCOPED_TRACE(kThreads);
  const int blocks = 3;
  std::vector<uint32_t> in(blocks * kThreads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i % 7);
  std::vector<uint32_t> prefix(in.size()), again(in.size()), aggregate(blocks);
  ASSERT_EQ(LaunchNow(ScanTwice<kThreads>, blocks, kThreads, in.data(),
                      prefix.data(), aggregate.data(), again.data()),
            cudaSuccess);
  for (int b = 0; b < blocks; ++b) {
    uint32_t running = 0;
    for (int t = 0; t < kThreads; ++t) {
      const size_t i = static_cast<size_t>(b) * kThreads + t;
      EXPECT_EQ(prefix[i], running);
      EXPECT_EQ(again[i], 2 * running);
      running += in[i];
    }
    EXPECT_EQ(aggregate[b], running);
  }
}

TEST(EmulatorTest, BlockScanGivesExclusivePrefixesAndTheTotal) {
  ExpectScans<256>();
  ExpectScans<512>();
}

__global__ void ScanTwiceWithoutSync(uint32_t* out) {
  using BlockScan = cub::BlockScan<uint32_t, 64>;
  __shared__ typename BlockScan::TempStorage storage;
  uint32_t first = 0, second = 0;
  BlockScan(storage).ExclusiveSum(1u, first);
  BlockScan(storage).ExclusiveSum(1u, second);
  out[threadIdx.x] = first + second;
}

TEST(EmulatorTest, BlockScanStorageReusedWithoutSyncFailsTheLaunch) {
  std::vector<uint32_t> out(64);
  EXPECT_EQ(LaunchNow(ScanTwiceWithoutSync, 1, 64, out.data()),
            cudaErrorLaunchFailure);
}

TEST(EmulatorTest, BlockScanInABlockOfAnotherSizeFailsTheLaunch) {
  std::vector<uint32_t> in(128), prefix(128), again(128), aggregate(1);
  EXPECT_EQ(LaunchNow(ScanTwice<256>, 1, 128, in.data(), prefix.data(),
                      aggregate.data(), again.data()),
            cudaErrorLaunchFailure);
}

// --- Launch shapes and streams. ----------------------------------------------

TEST(EmulatorTest, ShapesAGpuRefusesAreRefused) {
  uint64_t out[64];
  EXPECT_EQ(LaunchNow(ChangeOwnArgument, 0, 64, 1, out),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(LaunchNow(ChangeOwnArgument, 1, 1025, 1, out),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(LaunchNow(ChangeOwnArgument, dim3(1, 65536), 1, 1, out),
            cudaErrorInvalidConfiguration);
}

TEST(EmulatorTest, StreamsAreHandlesThatMustBeAlive) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  uint64_t out[4];
  EXPECT_EQ(Launch(ChangeOwnArgument, 1, 4, stream, 1, out), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(Launch(ChangeOwnArgument, 1, 4, stream, 1, out),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
}

// --- cub::DeviceSelect and thrust::counting_iterator. ------------------------

struct IsMultipleOf3 {
  bool operator()(uint32_t i) const { return i % 3 == 0; }
};

TEST(EmulatorTest, DeviceSelectFollowsCubsProtocolAndKeepsOrder) {
  const int64_t n = 10000;
  size_t bytes = 0;
  ASSERT_EQ(cub::DeviceSelect::If(
                nullptr, bytes, thrust::counting_iterator<uint32_t>(0u),
                static_cast<uint32_t*>(nullptr), static_cast<int64_t*>(nullptr),
                n, IsMultipleOf3{}),
            cudaSuccess);
  ASSERT_GT(bytes, 0u);
  std::vector<char> temp(bytes);
  std::vector<uint32_t> out(n);
  int64_t count = -1;
  size_t too_few = bytes - 1;
  EXPECT_EQ(cub::DeviceSelect::If(temp.data(), too_few,
                                  thrust::counting_iterator<uint32_t>(0u),
                                  out.data(), &count, n, IsMultipleOf3{}),
            cudaErrorInvalidValue);
  cudaGetLastError();
  ASSERT_EQ(cub::DeviceSelect::If(temp.data(), bytes,
                                  thrust::counting_iterator<uint32_t>(5u),
                                  out.data(), &count, n, IsMultipleOf3{}),
            cudaSuccess);
  ASSERT_EQ(count, 3333);
  for (int64_t i = 0; i < count; ++i) EXPECT_EQ(out[i], 6 + 3 * i);
}

// --- The runtime shim. -------------------------------------------------------

TEST(EmulatorTest, OneDeviceNamedForTheEmulation) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);
  int driver = 0, runtime = 0;
  ASSERT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  ASSERT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  EXPECT_EQ(driver, runtime);
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_STREQ(prop.name, "entrograd CPU emulation");
  int multiprocessors = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&multiprocessors,
                                   cudaDevAttrMultiProcessorCount, 0),
            cudaSuccess);
  EXPECT_EQ(multiprocessors, 4);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  EXPECT_STREQ(cudaGetErrorName(cudaGetLastError()), "cudaErrorInvalidDevice");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(EmulatorTest, DeviceMemoryIsCheckedAndNotZeroed) {
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1000), cudaSuccess);
  size_t free_after = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_EQ(free_before - free_after, 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(device) % 256, 0u);
  // Fresh memory holds a pattern, as CUDA promises nothing.
  EXPECT_NE(static_cast<unsigned char*>(device)[999], 0);

  std::vector<char> host(1001, 7);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 1000, cudaMemcpyHostToDevice),
            cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 1001, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), static_cast<char*>(device) + 1, 1000,
                       cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(static_cast<char*>(device) + 500, 0, 501),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemsetAsync(device, 0, 1000, nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), device, 1000, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(host[999], 0);
  EXPECT_EQ(cudaFree(host.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(device), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue);
  cudaGetLastError();

  void* nothing = &host;
  EXPECT_EQ(cudaMalloc(&nothing, 0), cudaSuccess);
  EXPECT_EQ(nothing, nullptr);
  void* huge = nullptr;
  EXPECT_EQ(cudaMalloc(&huge, total + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
}

}  // namespace
}  // namespace entrograd::cuda_emulation
