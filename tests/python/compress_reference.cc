// compress_reference: the C++ compression core (LayerCompressor) run over
// gradients from a file, for python_compression_test to compare the
// Python front end with bit for bit.
//
//   compress_reference INPUT OUTPUT NUMEL STEPS POLICY RHO DENSE_BELOW
//                      MOMENTUM_CORRECTION(0|1) MOMENTUM
//
// INPUT: STEPS * NUMEL little-endian float32 (the gradient of each step).
// OUTPUT, per step: int64 k, int64 dense (0|1), int64 n, n uint32 indices,
// int64 m, m float32 values, NUMEL float32 residual, int64 v, v float32
// velocity. Exits 1 with a message on stderr on any error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/compression_options.h"
#include "entrograd/layer_compressor.h"

namespace {

template <typename T>
void Put(std::ofstream& out, const T& value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
void PutAll(std::ofstream& out, absl::Span<const T> values) {
  Put(out, static_cast<int64_t>(values.size()));
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(T)));
}

int Fail(const std::string& message) {
  std::cerr << "compress_reference: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10) {
    return Fail(
        "usage: INPUT OUTPUT NUMEL STEPS POLICY RHO DENSE_BELOW "
        "MOMENTUM_CORRECTION MOMENTUM");
  }
  const int64_t numel = std::atoll(argv[3]);
  const int64_t steps = std::atoll(argv[4]);
  entrograd::CompressionOptions options;
  absl::StatusOr<entrograd::KeepPolicy> policy =
      entrograd::ParseKeepPolicy(argv[5]);
  if (!policy.ok()) return Fail(policy.status().ToString());
  options.policy = *policy;
  options.rho = std::atof(argv[6]);
  options.dense_below = std::atoll(argv[7]);
  options.momentum_correction = std::string(argv[8]) == "1";
  options.momentum = std::atof(argv[9]);
  absl::StatusOr<std::unique_ptr<entrograd::LayerCompressor>> compressor =
      entrograd::LayerCompressor::Create(numel, options);
  if (!compressor.ok()) return Fail(compressor.status().ToString());

  std::ifstream in(argv[1], std::ios::binary);
  std::ofstream out(argv[2], std::ios::binary);
  std::vector<float> gradient(static_cast<size_t>(numel));
  for (int64_t step = 0; step < steps; ++step) {
    if (!in.read(reinterpret_cast<char*>(gradient.data()),
                 static_cast<std::streamsize>(numel * sizeof(float)))) {
      return Fail("INPUT holds fewer than STEPS * NUMEL floats");
    }
    entrograd::CompressedLayer compressed;
    absl::Status status = (*compressor)->Compress(gradient, step, &compressed);
    if (!status.ok()) return Fail(status.ToString());
    Put(out, compressed.k);
    Put(out, static_cast<int64_t>(compressed.dense ? 1 : 0));
    PutAll(out, absl::MakeConstSpan(compressed.indices));
    PutAll(out, absl::MakeConstSpan(compressed.values));
    const absl::Span<const float> residual = (*compressor)->residual();
    out.write(reinterpret_cast<const char*>(residual.data()),
              static_cast<std::streamsize>(residual.size() * sizeof(float)));
    PutAll(out, (*compressor)->velocity());
  }
  if (!out) return Fail("cannot write OUTPUT");
  return 0;
}
