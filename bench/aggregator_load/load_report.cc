#include "bench/aggregator_load/load_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "workers/run_format/json_double.h"

namespace entrograd::bench {

namespace {

using run_format::DumpJson;
using run_format::Json;
using run_format::JsonDouble;

const ShardReading& Last(const LoadReport& report, int shard) {
  return report.samples.back().shards[shard];
}

// The sample nearest to `fraction` of the run's samples (0: first, 1: last).
const ShardReading& At(const LoadReport& report, int shard, double fraction) {
  const size_t index = static_cast<size_t>(
      std::lround(fraction * (report.samples.size() - 1)));
  return report.samples[index].shards[shard];
}

double Seconds(const LoadReport& report) {
  return std::max(1e-9, absl::ToDoubleSeconds(report.result.elapsed));
}

double RoundsPerSecond(const LoadReport& report, int shard) {
  return (Last(report, shard).rounds_completed -
          report.baseline[shard].rounds_completed) /
         Seconds(report);
}

double BytesPerSecond(const LoadReport& report, int shard) {
  const ShardReading& last = Last(report, shard);
  const ShardReading& base = report.baseline[shard];
  return (last.uplink_wire_bytes - base.uplink_wire_bytes +
          last.downlink_wire_bytes - base.downlink_wire_bytes) /
         Seconds(report);
}

int64_t ShardErrors(const LoadReport& report, int shard) {
  const ShardReading& last = Last(report, shard);
  if (last.rounds_completed < 0) return 1;  // metrics unreadable
  return static_cast<int64_t>(last.rounds_aborted + last.rounds_rejected +
                              last.rejects) +
         (report.shard_exits[shard] == "exited with status 0" ? 0 : 1);
}

Json ShardJson(const LoadReport& report, int shard) {
  Json times = Json::array();
  Json peaks = Json::array();
  Json rss = Json::array();
  for (const ShardSampler::Sample& sample : report.samples) {
    times.push_back(JsonDouble(sample.seconds));
    peaks.push_back(sample.shards[shard].peak_rss_bytes);
    rss.push_back(sample.shards[shard].rss_bytes);
  }
  const ShardReading& last = Last(report, shard);
  const ShardReading& base = report.baseline[shard];
  Json json;
  json["address"] = report.shard_addresses[shard];
  json["rounds_completed"] =
      JsonDouble(last.rounds_completed - base.rounds_completed);
  json["rounds_per_second"] = JsonDouble(RoundsPerSecond(report, shard));
  json["uplink_wire_bytes"] =
      JsonDouble(last.uplink_wire_bytes - base.uplink_wire_bytes);
  json["downlink_wire_bytes"] =
      JsonDouble(last.downlink_wire_bytes - base.downlink_wire_bytes);
  json["bytes_per_second"] = JsonDouble(BytesPerSecond(report, shard));
  json["rounds_aborted"] = JsonDouble(last.rounds_aborted);
  json["rounds_rejected"] = JsonDouble(last.rounds_rejected);
  json["rejects"] = JsonDouble(last.rejects);
  json["duplicates"] = JsonDouble(last.duplicates);
  json["errors"] = ShardErrors(report, shard);
  json["exit"] = report.shard_exits[shard];
  json["peak_rss_bytes_connected"] = base.peak_rss_bytes;
  json["peak_rss_bytes_quarter"] = At(report, shard, 0.25).peak_rss_bytes;
  json["peak_rss_bytes_end"] = last.peak_rss_bytes;
  json["sample_seconds"] = std::move(times);
  json["peak_rss_bytes"] = std::move(peaks);
  json["rss_bytes"] = std::move(rss);
  return json;
}

std::string Megabytes(int64_t bytes) {
  return absl::StrFormat("%.1f", bytes / (1024.0 * 1024.0));
}

}  // namespace

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(
      std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

int64_t TotalErrors(const LoadReport& report) {
  int64_t errors = report.result.errors;
  for (size_t s = 0; s < report.shard_addresses.size(); ++s) {
    errors += ShardErrors(report, static_cast<int>(s));
  }
  const int64_t expected_rounds =
      int64_t{report.options.jobs} * report.options.steps * report.options.layers;
  if (report.result.rounds_completed != expected_rounds) ++errors;
  return errors;
}

std::string LoadReportJson(const LoadReport& report) {
  const LoadOptions& o = report.options;
  const std::vector<double>& latency = report.result.round_latency_seconds;
  Json options;
  options["shards"] = o.shards;
  options["jobs"] = o.jobs;
  options["ranks"] = o.ranks;
  options["layers"] = o.layers;
  options["steps"] = o.steps;
  options["density"] = JsonDouble(o.density);
  options["shared_fraction"] = JsonDouble(o.shared_fraction);
  options["dense_below"] = o.dense_below;
  options["seed"] = o.seed;
  Json latency_json;
  latency_json["p50"] = JsonDouble(Quantile(latency, 0.5));
  latency_json["p99"] = JsonDouble(Quantile(latency, 0.99));
  latency_json["max"] = JsonDouble(Quantile(latency, 1.0));
  Json shards = Json::array();
  for (size_t s = 0; s < report.shard_addresses.size(); ++s) {
    shards.push_back(ShardJson(report, static_cast<int>(s)));
  }
  Json json;
  json["options"] = std::move(options);
  json["elapsed_seconds"] = JsonDouble(Seconds(report));
  json["rounds_completed"] = report.result.rounds_completed;
  json["rounds_per_second"] =
      JsonDouble(report.result.rounds_completed / Seconds(report));
  json["round_latency_seconds"] = std::move(latency_json);
  json["client_uplink_wire_bytes"] = report.result.uplink_wire_bytes;
  json["client_downlink_wire_bytes"] = report.result.downlink_wire_bytes;
  json["client_reconnects"] = report.result.reconnects;
  json["client_errors"] = report.result.errors;
  json["first_errors"] = report.result.first_errors;
  json["errors"] = TotalErrors(report);
  json["shards"] = std::move(shards);
  return DumpJson(json) + "\n";
}

std::string LoadReportTable(const LoadReport& report) {
  const LoadOptions& o = report.options;
  const std::vector<double>& latency = report.result.round_latency_seconds;
  std::string table = absl::StrFormat(
      "aggregator load: %d shards, %d jobs x %d ranks x %d layers, %d steps "
      "in %.1f s\n",
      o.shards, o.jobs, o.ranks, o.layers, o.steps, Seconds(report));
  absl::StrAppendFormat(
      &table, "%-17s %10s %10s %12s %22s %7s\n", "shard", "rounds", "rounds/s",
      "MB/s (u+d)", "peak RSS MB conn/25%/end", "errors");
  for (size_t s = 0; s < report.shard_addresses.size(); ++s) {
    const int shard = static_cast<int>(s);
    const ShardReading& last = Last(report, shard);
    absl::StrAppendFormat(
        &table, "%-17s %10.0f %10.1f %12.2f %22s %7d\n",
        report.shard_addresses[s],
        last.rounds_completed - report.baseline[s].rounds_completed,
        RoundsPerSecond(report, shard),
        BytesPerSecond(report, shard) / (1024.0 * 1024.0),
        absl::StrCat(Megabytes(report.baseline[s].peak_rss_bytes), "/",
                     Megabytes(At(report, shard, 0.25).peak_rss_bytes), "/",
                     Megabytes(last.peak_rss_bytes)),
        ShardErrors(report, shard));
  }
  absl::StrAppendFormat(
      &table,
      "all: %d rounds, %.1f rounds/s; round latency p50 %.2f ms, p99 %.2f ms, "
      "max %.2f ms; client errors %d; errors in all %d\n",
      report.result.rounds_completed,
      report.result.rounds_completed / Seconds(report),
      1e3 * Quantile(latency, 0.5), 1e3 * Quantile(latency, 0.99),
      1e3 * Quantile(latency, 1.0), report.result.errors, TotalErrors(report));
  for (const std::string& error : report.result.first_errors) {
    absl::StrAppend(&table, "  error: ", error, "\n");
  }
  return table;
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace entrograd::bench
