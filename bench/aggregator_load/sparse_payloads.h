// The load generator's payloads: a model's layer table of mixed sizes and,
// for each (job, rank, layer), a few contributions that look like a
// compressor's output (top-k at a given density, ascending indices,
// heavy-tailed values, ranks agreeing on part of their coordinates). Every
// payload is a pure function of its seed, so runs replay the same bytes.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_SPARSE_PAYLOADS_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_SPARSE_PAYLOADS_H_

#include <cstdint>
#include <vector>

#include "bench/aggregator_load/load_options.h"
#include "entrograd/client.h"

namespace entrograd::bench {

// `count` layers cycling through the shapes of a small CNN (conv and linear
// weights and their biases: 10 to 51,200 elements), so rounds of very
// different sizes interleave.
std::vector<LayerSpecification> LayerSizes(int count);

// The contribution of (job, rank, layer) in replay slot `variant`, for
// `step` (the caller sets nothing else). Dense below options.dense_below;
// otherwise ceil(density * numel) entries, a shared_fraction of them from
// the job's shared set of that (layer, variant).
LayerContribution MakeLoadContribution(const LoadOptions& options, int job,
                                       int rank, uint32_t layer,
                                       uint64_t numel, int variant);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_SPARSE_PAYLOADS_H_
