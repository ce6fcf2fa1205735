// entrograd-aggregator-load: flags -> load harness -> JSON report and a
// table; exit 0 only with zero errors. See docs/BENCHMARKS.md "Load, chaos
// and partition".
#include <iostream>

#include "bench/aggregator_load/load_flags.h"
#include "bench/aggregator_load/load_harness.h"
#include "bench/aggregator_load/load_report.h"

int main(int argc, char** argv) {
  absl::StatusOr<entrograd::bench::LoadOptions> options =
      entrograd::bench::LoadOptionsFromFlags(argc, argv);
  if (!options.ok()) {
    std::cerr << "entrograd-aggregator-load: " << options.status().message()
              << "\n";
    return 2;
  }
  absl::StatusOr<entrograd::bench::LoadReport> report =
      entrograd::bench::RunLoadHarness(*options);
  if (!report.ok()) {
    std::cerr << "entrograd-aggregator-load: " << report.status() << "\n";
    return 1;
  }
  const std::string json_path = options->out_dir + "/load_report.json";
  if (absl::Status status = entrograd::bench::WriteTextFile(
          json_path, entrograd::bench::LoadReportJson(*report));
      !status.ok()) {
    std::cerr << "entrograd-aggregator-load: " << status << "\n";
    return 1;
  }
  std::cout << entrograd::bench::LoadReportTable(*report) << "report: "
            << json_path << std::endl;
  return entrograd::bench::TotalErrors(*report) == 0 ? 0 : 1;
}
