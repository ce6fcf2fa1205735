#include "workers/launcher/run_summary.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "workers/launcher/format_units.h"
#include "workers/launcher/svg_plot.h"
#include "workers/run_format/run_summary.h"
#include "workers/run_format/worker_event.h"

namespace entrograd::launcher {

using run_format::CompressionRatio;
using run_format::DoneEvent;
using run_format::EvalEvent;
using run_format::LayerShare;
using run_format::PhaseStats;
using run_format::RunSummary;
using run_format::StartEvent;
using run_format::StepBreakdown;

namespace {

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::string OptionalPercent(const std::optional<double>& fraction) {
  return fraction.has_value() ? FormatPercent(*fraction) : "-";
}

std::string BytesCell(int64_t bytes) {
  return absl::StrCat(FormatCount(bytes), " (", FormatBytes(bytes), ")");
}

// The parameter the policy runs on: "threshold 0.001" under threshold (where
// rho plays no part), "rho 0.01" otherwise.
std::string PolicyParameter(const RunSummary& summary) {
  return summary.policy == "threshold"
             ? absl::StrFormat("threshold %g", summary.threshold)
             : absl::StrFormat("rho %g", summary.rho);
}

// The plot's series from the record: every step reported by all ranks, the
// evaluations, and the final one when no epoch evaluation covers it.
TrainingPlot BuildTrainingPlot(const RunSummary& summary,
                               const RunRecord& record) {
  TrainingPlot plot;
  plot.title = absl::StrCat("entrograd ", summary.job_id);
  plot.subtitle = absl::StrFormat(
      "policy %s, %s, %d workers, %d steps: test accuracy %s, %s less "
      "traffic than dense float32",
      summary.policy, PolicyParameter(summary), summary.workers, summary.steps,
      OptionalPercent(summary.test_accuracy),
      FormatRatio(summary.compression_ratio));
  for (const StepPoint& point : record.Steps()) {
    const double x = static_cast<double>(point.step);
    plot.loss.push_back({x, point.mean_loss});
    plot.wire_bytes.push_back({x, static_cast<double>(point.bytes.wire())});
    plot.dense_bytes.push_back(
        {x, static_cast<double>(point.bytes.dense_equivalent)});
  }
  for (const EvalEvent& eval : record.evals()) {
    plot.accuracy.push_back(
        {static_cast<double>(eval.step), eval.test_accuracy});
  }
  for (const EpochPoint& epoch : record.epochs()) {
    const double x = static_cast<double>(epoch.step);
    // An epoch's end is also a periodic evaluation: draw it once.
    const bool drawn =
        std::any_of(plot.accuracy.begin(), plot.accuracy.end(),
                    [&](const auto& point) { return point.x == x; });
    if (!drawn && epoch.test_accuracy.has_value()) {
      plot.accuracy.push_back({x, *epoch.test_accuracy});
    }
  }
  std::sort(plot.accuracy.begin(), plot.accuracy.end(),
            [](const auto& a, const auto& b) { return a.x < b.x; });
  const std::optional<DoneEvent>& done = record.done(0);
  if (done.has_value() && done->test_accuracy.has_value() &&
      (plot.accuracy.empty() ||
       plot.accuracy.back().x < static_cast<double>(done->steps))) {
    plot.accuracy.push_back(
        {static_cast<double>(done->steps), *done->test_accuracy});
  }
  return plot;
}

// Nearest-rank percentile of sorted `values` (q in (0, 1]).
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

PhaseStats StatsOf(const std::vector<StepTimes>& times,
                   double StepTimes::*phase) {
  std::vector<double> values;
  values.reserve(times.size());
  for (const StepTimes& t : times) values.push_back(t.*phase);
  std::sort(values.begin(), values.end());
  PhaseStats stats;
  if (values.empty()) return stats;
  const size_t n = values.size();
  stats.median =
      n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  stats.p90 = Percentile(values, 0.9);
  return stats;
}

std::string PhaseCell(const PhaseStats& stats) {
  return absl::StrCat(FormatSeconds(stats.median), " / ",
                      FormatSeconds(stats.p90));
}

// Rank 0's layers, each with the share sent averaged over the ranks that
// report the same layer there (every rank, unless one died first); the
// share applied is the same on every rank.
std::vector<LayerShare> LayerSharesOverRanks(const RunRecord& record) {
  const std::optional<DoneEvent>& lead = record.done(0);
  if (!lead.has_value()) return {};
  std::vector<LayerShare> shares = lead->layer_shares;
  for (size_t i = 0; i < shares.size(); ++i) {
    double sent_sum = 0;
    int ranks = 0;
    for (int rank = 0; rank < record.world_size(); ++rank) {
      const std::optional<DoneEvent>& done = record.done(rank);
      if (!done.has_value() || done->layer_shares.size() != shares.size() ||
          done->layer_shares[i].name != shares[i].name) {
        continue;
      }
      sent_sum += done->layer_shares[i].sent_share;
      ++ranks;
    }
    shares[i].sent_share = sent_sum / ranks;  // rank 0 counts: ranks >= 1
  }
  return shares;
}

// A share as a percentage with three significant digits: 0.102%, 100%.
std::string ShareCell(double share) {
  return absl::StrFormat("%.3g%%", share * 100);
}

}  // namespace

StepBreakdown SummarizeStepTimes(const std::vector<StepTimes>& times) {
  StepBreakdown breakdown;
  breakdown.samples = static_cast<int64_t>(times.size());
  breakdown.forward_backward = StatsOf(times, &StepTimes::forward_backward);
  breakdown.compress = StatsOf(times, &StepTimes::compress);
  breakdown.wait = StatsOf(times, &StepTimes::wait);
  breakdown.apply = StatsOf(times, &StepTimes::apply);
  breakdown.step = StatsOf(times, &StepTimes::step);
  return breakdown;
}

RunSummary SummarizeRun(const LaunchOptions& options, const std::string& job_id,
                        const RunRecord& record, double wall_seconds) {
  RunSummary summary;
  summary.job_id = job_id;
  summary.policy = options.policy;
  summary.workers = options.workers;
  summary.shards = options.shards;
  summary.rho = options.rho;
  summary.threshold = options.threshold;
  summary.epochs = options.epochs;
  summary.max_steps = options.max_steps;
  summary.batch_size = options.batch_size;
  summary.lr = options.lr;
  summary.lr_schedule = options.lr_schedule;
  summary.momentum = options.momentum;
  summary.seed = options.seed;
  summary.model = options.model;
  summary.eval_every = options.eval_every;
  summary.validation = options.validation;
  summary.warmup_steps = options.warmup_steps;
  summary.dense_below = options.dense_below;
  summary.merged_keep_factor = options.merged_keep_factor;
  summary.value_type = options.value_type;
  summary.extra_worker_args = options.extra_worker_args;
  summary.wall_seconds = wall_seconds;
  summary.breakdown = SummarizeStepTimes(record.step_times());
  summary.evals = record.evals();
  if (!summary.evals.empty()) {
    summary.validation_accuracy = summary.evals.back().validation_accuracy;
  }

  summary.epochs_completed = static_cast<int64_t>(record.epochs().size());
  if (const std::optional<StartEvent>& start = record.start(0)) {
    summary.parameters = start->parameters;
    summary.layers = start->layers;
  }
  summary.bytes = record.TotalBytes();
  summary.compression_ratio = CompressionRatio(summary.bytes);
  summary.compress_seconds = record.TotalCompressSeconds();
  summary.wait_seconds = record.TotalWaitSeconds();

  const std::optional<DoneEvent>& lead = record.done(0);
  summary.steps = lead.has_value() ? lead->steps : record.lead_steps();
  if (lead.has_value()) {
    summary.test_accuracy = lead->test_accuracy;
    summary.test_loss = lead->test_loss;
    summary.params_hash = lead->params_hash;
    summary.train_seconds = lead->train_seconds;
  }
  if (!summary.test_accuracy.has_value() && !record.epochs().empty()) {
    summary.test_accuracy = record.epochs().back().test_accuracy;
  }
  if (!summary.test_loss.has_value() && !record.epochs().empty()) {
    summary.test_loss = record.epochs().back().test_loss;
  }

  double slowest = -1;
  bool identical = record.AllDone() && !summary.params_hash.empty();
  for (int rank = 0; rank < record.world_size(); ++rank) {
    const std::optional<DoneEvent>& done = record.done(rank);
    if (!done.has_value()) continue;
    if (done->seconds.has_value()) slowest = std::max(slowest, *done->seconds);
    if (done->params_hash != summary.params_hash) identical = false;
  }
  summary.replicas_identical = identical;
  summary.layer_shares = LayerSharesOverRanks(record);
  // The workers' own clocks exclude start-up (data loading, joining); fall
  // back to the launcher's when they did not say.
  summary.seconds = slowest >= 0 ? slowest : wall_seconds;
  summary.seconds_per_step =
      summary.steps > 0 ? summary.seconds / static_cast<double>(summary.steps)
                        : 0;
  return summary;
}

std::string SummaryMarkdown(const RunSummary& summary) {
  std::string md = absl::StrCat("# entrograd run ", summary.job_id, "\n\n");
  absl::StrAppendFormat(
      &md,
      "Policy `%s` (%s) on %d workers, %d steps: test accuracy %s; the "
      "gradients took %s on the wire, %s less than dense float32. Replicas "
      "%s.\n\n",
      summary.policy, PolicyParameter(summary), summary.workers, summary.steps,
      OptionalPercent(summary.test_accuracy), FormatBytes(summary.bytes.wire()),
      FormatRatio(summary.compression_ratio),
      summary.replicas_identical ? "identical" : "NOT identical");
  std::vector<std::pair<std::string, std::string>> rows = {
      {"policy", summary.policy},
      {"rho", absl::StrFormat("%g", summary.rho)},
      {"threshold", absl::StrFormat("%g", summary.threshold)},
      {"workers, aggregator shards",
       absl::StrCat(summary.workers, ", ", summary.shards)},
      {"epochs (completed / requested)",
       absl::StrCat(summary.epochs_completed, " / ", summary.epochs)},
      {"steps", FormatCount(summary.steps)},
      {"batch size, lr (schedule), momentum, seed",
       absl::StrFormat("%d, %g (%s), %g, %d", summary.batch_size, summary.lr,
                       summary.lr_schedule, summary.momentum, summary.seed)},
      {"warm-up steps, value type",
       absl::StrCat(summary.warmup_steps, ", ", summary.value_type)},
      {"dense below, merged keep factor",
       absl::StrFormat("%d, %s", summary.dense_below,
                       summary.merged_keep_factor > 0
                           ? absl::StrFormat("%g (global top-k)",
                                             summary.merged_keep_factor)
                           : std::string("0 (union)"))},
      {"more worker flags", summary.extra_worker_args.empty()
                                ? std::string("-")
                                : summary.extra_worker_args},
      {"parameters (layers)", absl::StrCat(FormatCount(summary.parameters),
                                           " (", summary.layers, ")")},
      {"test accuracy", OptionalPercent(summary.test_accuracy)},
      {"test loss", summary.test_loss.has_value()
                        ? FormatLoss(*summary.test_loss)
                        : std::string("-")},
      {absl::StrCat("validation accuracy (last ", summary.validation,
                    " training images, held out)"),
       OptionalPercent(summary.validation_accuracy)},
      {"uplink wire bytes", BytesCell(summary.bytes.uplink)},
      {"downlink wire bytes", BytesCell(summary.bytes.downlink)},
      {"dense-equivalent bytes", BytesCell(summary.bytes.dense_equivalent)},
      {"compression ratio", FormatRatio(summary.compression_ratio)},
      {"training time", FormatSeconds(summary.seconds)},
      {"time per step", FormatSeconds(summary.seconds_per_step)},
      {"compress / wait time (all ranks)",
       absl::StrCat(FormatSeconds(summary.compress_seconds), " / ",
                    FormatSeconds(summary.wait_seconds))},
      {"step: forward+backward (median / p90)",
       PhaseCell(summary.breakdown.forward_backward)},
      {"step: compress (median / p90)", PhaseCell(summary.breakdown.compress)},
      {"step: wait, network + merge (median / p90)",
       PhaseCell(summary.breakdown.wait)},
      {"step: apply (median / p90)", PhaseCell(summary.breakdown.apply)},
      {"step: total (median / p90)", PhaseCell(summary.breakdown.step)},
      {"wall time (with start-up)", FormatSeconds(summary.wall_seconds)},
      {"model", summary.model},
      {"link",
       summary.link.has_value() ? summary.link->rate : std::string("loopback")},
      {"replicas identical", summary.replicas_identical ? "yes" : "no"},
      {"params hash",
       summary.params_hash.empty() ? "-" : "`" + summary.params_hash + "`"},
  };
  if (summary.link.has_value()) {
    rows.push_back({"bytes on the link interfaces (workers + aggregator sent)",
                    BytesCell(summary.link->total())});
  }
  for (const EvalEvent& eval : summary.evals) {
    rows.push_back(
        {absl::StrCat("test accuracy at step ", eval.step),
         absl::StrCat(FormatPercent(eval.test_accuracy), " after ",
                      FormatSeconds(eval.train_seconds), " of training")});
  }
  md += "| metric | value |\n| --- | --- |\n";
  for (const auto& [name, value] : rows) {
    // A '|' in a value would split its cell.
    std::string cell = value;
    for (size_t at = cell.find('|'); at != std::string::npos;
         at = cell.find('|', at + 2)) {
      cell.replace(at, 1, "\\|");
    }
    absl::StrAppend(&md, "| ", name, " | ", cell, " |\n");
  }
  if (!summary.layer_shares.empty()) {
    md +=
        "\nEach layer's share of entries sent (mean over steps and ranks) "
        "and applied (the merged updates, mean over steps):\n\n"
        "| layer | elements | sent | applied |\n| --- | ---: | ---: | ---: |\n";
    for (const LayerShare& share : summary.layer_shares) {
      absl::StrAppend(&md, "| `", share.name, "` | ", FormatCount(share.numel),
                      " | ", ShareCell(share.sent_share), " | ",
                      ShareCell(share.merged_share), " |\n");
    }
  }
  return md;
}

absl::Status WriteRunResults(const std::string& dir, const RunSummary& summary,
                             const RunRecord& record) {
  if (absl::Status status = WriteTextFile(
          dir + "/summary.json", run_format::FormatRunSummaryJson(summary));
      !status.ok()) {
    return status;
  }
  if (absl::Status status =
          WriteTextFile(dir + "/summary.md", SummaryMarkdown(summary));
      !status.ok()) {
    return status;
  }
  return WriteTextFile(dir + "/plot.svg",
                       RenderTrainingPlot(BuildTrainingPlot(summary, record)));
}

}  // namespace entrograd::launcher
