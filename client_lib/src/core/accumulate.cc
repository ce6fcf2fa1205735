#include "core/accumulate.h"

#include <algorithm>

#include "core/interval_sums.h"
#include "entrograd/entropy.h"

namespace entrograd {

namespace {

// Elements per block: small enough that a block's u is still in L1 when the
// accumulate loop reads it again after the |u| sums, a multiple of kSumLanes
// so that the lane of every element (and so the sum) does not depend on the
// blocking.
constexpr int64_t kBlock = 2048;
static_assert(kBlock % kSumLanes == 0);
static_assert(kBlock <= CandidateCollector::kScanBlock);

}  // namespace

void AccumulateAndMeasure(const AccumulateBuffers& buffers, float momentum) {
  const int64_t n = static_cast<int64_t>(buffers.gradient.size());
  const int64_t m = static_cast<int64_t>(buffers.interval_abs_sums.size());
  const bool whole = buffers.residual.empty();
  const bool with_momentum = !buffers.velocity.empty();
  const float* u = buffers.gradient.data();
  const float* g = buffers.residual.data();
  const float* v = buffers.velocity.data();
  float* a = buffers.accumulated.data();
  float* v_next = buffers.next_velocity.data();

  for (int64_t i = 0; i < m; ++i) {
    const int64_t begin = IntervalBegin(i, n, m);
    const int64_t end = IntervalBegin(i + 1, n, m);
    double lanes[kSumLanes] = {};
    for (int64_t block = begin; block < end; block += kBlock) {
      const int64_t length = std::min(kBlock, end - block);
      if (!buffers.measure_accumulated) AccumulateAbs(u + block, length, lanes);
      // Separate simple loops so the compiler vectorises each of them.
      if (whole) {
        std::copy(u + block, u + block + length, a + block);
      } else if (with_momentum) {
        for (int64_t j = block; j < block + length; ++j) {
          const float velocity = NextVelocity(momentum, v[j], u[j]);
          v_next[j] = velocity;
          a[j] = Accumulated(g[j], velocity);
        }
      } else {
        for (int64_t j = block; j < block + length; ++j) {
          a[j] = Accumulated(g[j], u[j]);
        }
      }
      // While the block of A is still in L1: saves a second pass over A.
      if (buffers.measure_accumulated) AccumulateAbs(a + block, length, lanes);
      if (buffers.candidates != nullptr) {
        buffers.candidates->Scan(a, block, block + length);
      }
    }
    buffers.interval_abs_sums[i] = SumLanes(lanes);
  }
}

}  // namespace entrograd
