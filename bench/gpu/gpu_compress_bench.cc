// gpu_compress_bench: times the whole device compress of one layer
// (DeviceLayerCompressor::Accumulate + SelectTopK, k = round(density * n),
// results left on the device) against a device-to-device copy of the same n
// floats, the HBM bandwidth limit. One JSON line per case; gpu_report.py
// turns them, with torch_topk_bench.py's, into docs/BENCHMARKS.md's table.
//
//   gpu_compress_bench [--sizes=1M,25M,100M,400M] [--densities=0.001,0.01]
//                      [--repeats=20] [--warmup=3] [--momentum=off,on]
//                      [--json-out=FILE]
//
// Timing: CUDA events on one stream around each call pair, median of
// --repeats after --warmup untimed steps; the host wall time of the same
// span too (Accumulate waits for the stream to read the interval sums, so
// the two differ only by launch latency). Every timed compress is a real
// training step: the residual carries over from step to step. Small layers
// rotate over enough independent compressors and buffers that each step
// reads from HBM, not from a warm L2.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "entrograd/compression_options.h"
#include "entrograd/cuda/device_compressor.h"
#include "gradient_data.h"
#include "nlohmann/json.hpp"

namespace entrograd::bench {
namespace {

struct Flags {
  std::vector<int64_t> sizes = {1000000, 25000000, 100000000, 400000000};
  std::vector<double> densities = {0.001, 0.01};
  std::vector<bool> momentum = {false, true};
  int repeats = 20;
  int warmup = 3;
  std::string json_out;
};

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "gpu_compress_bench: %s\n", message.c_str());
  std::exit(1);
}

void Check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    Fail(absl::StrFormat("%s: %s", what, cudaGetErrorString(error)));
  }
}

void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) Fail(absl::StrFormat("%s: %s", what, status.ToString()));
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// "400M", "25000000", "1K", "2G" (decimal multipliers).
int64_t ParseSize(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  double scale = 1;
  if (*end == 'K' || *end == 'k') scale = 1e3, ++end;
  if (*end == 'M' || *end == 'm') scale = 1e6, ++end;
  if (*end == 'G' || *end == 'g') scale = 1e9, ++end;
  if (*end != '\0' || !(value > 0)) Fail("bad size: " + text);
  return static_cast<int64_t>(std::llround(value * scale));
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--help" && i + 1 < argc) {
      value = argv[++i];
    }
    if (arg == "--sizes") {
      flags.sizes.clear();
      for (const std::string& s : SplitCommas(value)) {
        flags.sizes.push_back(ParseSize(s));
      }
    } else if (arg == "--densities") {
      flags.densities.clear();
      for (const std::string& s : SplitCommas(value)) {
        flags.densities.push_back(std::atof(s.c_str()));
      }
    } else if (arg == "--momentum") {
      flags.momentum.clear();
      for (const std::string& s : SplitCommas(value)) {
        if (s != "on" && s != "off") Fail("--momentum takes off,on");
        flags.momentum.push_back(s == "on");
      }
    } else if (arg == "--repeats") {
      flags.repeats = std::max(1, std::atoi(value.c_str()));
    } else if (arg == "--warmup") {
      flags.warmup = std::max(0, std::atoi(value.c_str()));
    } else if (arg == "--json-out") {
      flags.json_out = value;
    } else {
      std::fprintf(arg == "--help" ? stdout : stderr,
                   "usage: gpu_compress_bench [--sizes=1M,25M,100M,400M] "
                   "[--densities=0.001,0.01] [--repeats=20] [--warmup=3] "
                   "[--momentum=off,on] [--json-out=FILE]\n");
      std::exit(arg == "--help" ? 0 : 2);
    }
  }
  return flags;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// One independent layer: its compressor, its gradient and a copy target.
struct LayerSet {
  std::unique_ptr<cuda::DeviceLayerCompressor> compressor;
  void* gradient = nullptr;
  void* copy_target = nullptr;
};

class Bench {
 public:
  Bench(const Flags& flags, std::FILE* json) : flags_(flags), json_(json) {
    Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
          "cudaStreamCreate");
    Check(cudaEventCreate(&start_), "cudaEventCreate");
    Check(cudaEventCreate(&stop_), "cudaEventCreate");
    cudaDeviceProp props;
    Check(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
    gpu_name_ = props.name;
    l2_bytes_ = props.l2CacheSize;
    std::printf("GPU: %s, %d SMs, %.1f GiB, L2 %.0f MiB\n", props.name,
                props.multiProcessorCount,
                static_cast<double>(props.totalGlobalMem) / (1 << 30),
                static_cast<double>(props.l2CacheSize) / (1 << 20));
  }

  void RunSize(int64_t n, bool momentum) {
    const std::vector<float>& host = HeavyTailedGradient(n);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    // Bytes one step touches in its own buffers: gradient, G, A, V, V'.
    const double set_bytes = static_cast<double>(bytes) * (momentum ? 5 : 3);
    const int sets = static_cast<int>(
        std::clamp(std::ceil(4.0 * l2_bytes_ / set_bytes), 1.0, 16.0));
    CompressionOptions options;
    options.policy = KeepPolicy::kTopK;
    options.dense_below = 0;
    options.momentum_correction = momentum;
    auto workspace = cuda::DeviceWorkspace::Create(n, options.intervals);
    Check(workspace.status(), "DeviceWorkspace::Create");
    std::vector<LayerSet> layers(sets);
    for (LayerSet& layer : layers) {
      auto compressor =
          cuda::DeviceLayerCompressor::Create(n, options, *workspace);
      Check(compressor.status(), "DeviceLayerCompressor::Create");
      layer.compressor = std::move(compressor).value();
      Check(cudaMalloc(&layer.gradient, bytes), "cudaMalloc");
      Check(cudaMalloc(&layer.copy_target, bytes), "cudaMalloc");
      Check(cudaMemcpy(layer.gradient, host.data(), bytes,
                       cudaMemcpyHostToDevice),
            "cudaMemcpy");
    }
    // Pageable uploads may still be in flight; the timed stream does not
    // wait for the legacy stream.
    Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    for (double density : flags_.densities) {
      RunCase(n, density, momentum, layers);
    }
    for (LayerSet& layer : layers) {
      cudaFree(layer.gradient);
      cudaFree(layer.copy_target);
    }
  }

 private:
  // Events around `body` on the stream; also the host wall time.
  template <typename Body>
  void Time(Body body, double* event_ms, double* wall_ms) {
    const auto wall_start = std::chrono::steady_clock::now();
    Check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    body();
    Check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    Check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    const auto wall_stop = std::chrono::steady_clock::now();
    float ms = 0;
    Check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    *event_ms = ms;
    *wall_ms = std::chrono::duration<double, std::milli>(wall_stop - wall_start)
                   .count();
  }

  void RunCase(int64_t n, double density, bool momentum,
               std::vector<LayerSet>& layers) {
    const int64_t k = std::clamp<int64_t>(
        std::llround(density * static_cast<double>(n)), 1, n);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    std::vector<double> compress_ms, compress_wall_ms, copy_ms;
    double hn = 0;
    for (int r = 0; r < flags_.warmup + flags_.repeats; ++r) {
      LayerSet& layer = layers[r % layers.size()];
      double event = 0, wall = 0;
      cuda::DeviceCompressedLayer out;
      Time(
          [&] {
            auto stats = layer.compressor->Accumulate(
                layer.gradient, cuda::GradientType::kFloat32, stream_);
            Check(stats.status(), "Accumulate");
            hn = stats->normalized_entropy;
            Check(layer.compressor->SelectTopK(k, step_++, density, stream_,
                                               &out),
                  "SelectTopK");
          },
          &event, &wall);
      if (out.k != k) Fail(absl::StrFormat("k = %d, expected %d", out.k, k));
      double copy_event = 0, copy_wall = 0;
      Time(
          [&] {
            Check(cudaMemcpyAsync(layer.copy_target, layer.gradient, bytes,
                                  cudaMemcpyDeviceToDevice, stream_),
                  "cudaMemcpyAsync");
          },
          &copy_event, &copy_wall);
      if (r < flags_.warmup) continue;
      compress_ms.push_back(event);
      compress_wall_ms.push_back(wall);
      copy_ms.push_back(copy_event);
    }
    const double compress = Median(compress_ms);
    const double copy = Median(copy_ms);
    // The fewest bytes a compress must move: read u and G (and V), write A
    // (and V'), write k indices and values. A copy moves 8 n (read + write).
    const double min_bytes =
        static_cast<double>(n) * (momentum ? 20 : 12) + 8.0 * k;
    const double copy_bytes = 8.0 * static_cast<double>(n);
    // One JSON line; ordered so that the members read in this order in a log.
    nlohmann::ordered_json row = nlohmann::ordered_json::object();
    row["bench"] = "gpu_compress";
    row["gpu"] = gpu_name_;
    row["n"] = n;
    row["density"] = density;
    row["k"] = k;
    row["momentum"] = momentum;
    row["repeats"] = flags_.repeats;
    row["layer_sets"] = static_cast<int>(layers.size());
    row["compress_ms"] = compress;
    row["compress_min_ms"] =
        *std::min_element(compress_ms.begin(), compress_ms.end());
    row["compress_wall_ms"] = Median(compress_wall_ms);
    row["copy_ms"] = copy;
    row["copy_fraction"] = copy / compress;
    row["copy_gb_per_s"] = copy_bytes / copy / 1e6;
    row["compress_min_bytes"] = min_bytes;
    row["bandwidth_share"] = (min_bytes / compress) / (copy_bytes / copy);
    row["normalized_entropy"] = hn;
    // Times are positive, so every number is finite; the GPU's name is
    // bytes from the driver, made valid UTF-8 if it is not.
    const std::string line =
        row.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false,
                 nlohmann::ordered_json::error_handler_t::replace);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    if (json_ != nullptr) {
      std::fprintf(json_, "%s\n", line.c_str());
      std::fflush(json_);
    }
  }

  const Flags& flags_;
  std::FILE* json_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  std::string gpu_name_;
  double l2_bytes_ = 0;
  int64_t step_ = 0;
};

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  Check(cuda::CheckCudaDeviceAvailable(), "no CUDA device");
  std::FILE* json = nullptr;
  if (!flags.json_out.empty()) {
    json = std::fopen(flags.json_out.c_str(), "w");
    if (json == nullptr) Fail("cannot write " + flags.json_out);
  }
  Bench bench(flags, json);
  for (int64_t n : flags.sizes) {
    for (bool momentum : flags.momentum) bench.RunSize(n, momentum);
  }
  if (json != nullptr) std::fclose(json);
  return 0;
}

}  // namespace
}  // namespace entrograd::bench

int main(int argc, char** argv) { return entrograd::bench::Main(argc, argv); }
