#include "bench/aggregator_load/load_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace entrograd::bench {

namespace {

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

std::string Number(double value) { return absl::StrFormat("%.6g", value); }

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ShardJson(const LoadReport& report, int shard) {
  std::vector<std::string> times;
  std::vector<std::string> peaks;
  std::vector<std::string> rss;
  for (const ShardSampler::Sample& sample : report.samples) {
    times.push_back(Number(sample.seconds));
    peaks.push_back(absl::StrCat(sample.shards[shard].peak_rss_bytes));
    rss.push_back(absl::StrCat(sample.shards[shard].rss_bytes));
  }
  const ShardReading& last = Last(report, shard);
  const ShardReading& base = report.baseline[shard];
  return absl::StrCat(
      "{\"address\":", Quoted(report.shard_addresses[shard]),
      ",\"rounds_completed\":", Number(last.rounds_completed - base.rounds_completed),
      ",\"rounds_per_second\":", Number(RoundsPerSecond(report, shard)),
      ",\"uplink_wire_bytes\":", Number(last.uplink_wire_bytes - base.uplink_wire_bytes),
      ",\"downlink_wire_bytes\":",
      Number(last.downlink_wire_bytes - base.downlink_wire_bytes),
      ",\"bytes_per_second\":", Number(BytesPerSecond(report, shard)),
      ",\"rounds_aborted\":", Number(last.rounds_aborted),
      ",\"rounds_rejected\":", Number(last.rounds_rejected),
      ",\"rejects\":", Number(last.rejects),
      ",\"duplicates\":", Number(last.duplicates),
      ",\"errors\":", ShardErrors(report, shard),
      ",\"exit\":", Quoted(report.shard_exits[shard]),
      ",\"peak_rss_bytes_connected\":", base.peak_rss_bytes,
      ",\"peak_rss_bytes_quarter\":", At(report, shard, 0.25).peak_rss_bytes,
      ",\"peak_rss_bytes_end\":", last.peak_rss_bytes,
      ",\"sample_seconds\":[", absl::StrJoin(times, ","), "]",
      ",\"peak_rss_bytes\":[", absl::StrJoin(peaks, ","), "]",
      ",\"rss_bytes\":[", absl::StrJoin(rss, ","), "]}");
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
  std::vector<std::string> shards;
  std::vector<std::string> errors;
  for (size_t s = 0; s < report.shard_addresses.size(); ++s) {
    shards.push_back(ShardJson(report, static_cast<int>(s)));
  }
  for (const std::string& error : report.result.first_errors) {
    errors.push_back(Quoted(error));
  }
  return absl::StrCat(
      "{\"options\":{\"shards\":", o.shards, ",\"jobs\":", o.jobs,
      ",\"ranks\":", o.ranks, ",\"layers\":", o.layers, ",\"steps\":", o.steps,
      ",\"density\":", Number(o.density),
      ",\"shared_fraction\":", Number(o.shared_fraction),
      ",\"dense_below\":", o.dense_below, ",\"seed\":", o.seed, "}",
      ",\"elapsed_seconds\":", Number(Seconds(report)),
      ",\"rounds_completed\":", report.result.rounds_completed,
      ",\"rounds_per_second\":",
      Number(report.result.rounds_completed / Seconds(report)),
      ",\"round_latency_seconds\":{\"p50\":", Number(Quantile(latency, 0.5)),
      ",\"p99\":", Number(Quantile(latency, 0.99)),
      ",\"max\":", Number(Quantile(latency, 1.0)), "}",
      ",\"client_uplink_wire_bytes\":", report.result.uplink_wire_bytes,
      ",\"client_downlink_wire_bytes\":", report.result.downlink_wire_bytes,
      ",\"client_reconnects\":", report.result.reconnects,
      ",\"client_errors\":", report.result.errors,
      ",\"first_errors\":[", absl::StrJoin(errors, ","), "]",
      ",\"errors\":", TotalErrors(report),
      ",\"shards\":[", absl::StrJoin(shards, ","), "]}\n");
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
