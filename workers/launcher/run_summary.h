// The result of a run: SummarizeRun turns what the workers reported into a
// RunSummary (summary.json, defined in workers/run_format/run_summary.h),
// SummaryMarkdown renders it as a table (summary.md), and WriteRunResults
// writes both and draws plot.svg. Totals are summed over ranks.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_RUN_SUMMARY_H_
#define ENTROGRAD_WORKERS_LAUNCHER_RUN_SUMMARY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "workers/launcher/launch_options.h"
#include "workers/launcher/run_record.h"
#include "workers/run_format/run_summary.h"

namespace entrograd::launcher {

// Median and p90 of each phase over `times` (zeros when empty).
run_format::StepBreakdown SummarizeStepTimes(
    const std::vector<StepTimes>& times);

// Summarises `record` for a run of `options` (job `job_id`) that took
// `wall_seconds`. Works on a partial record too (missing values stay empty).
// The link traffic is left empty: the launcher measures it.
run_format::RunSummary SummarizeRun(const LaunchOptions& options,
                                    const std::string& job_id,
                                    const RunRecord& record,
                                    double wall_seconds);

// summary.md: a short header line and a two-column Markdown table.
std::string SummaryMarkdown(const run_format::RunSummary& summary);

// Writes summary.json, summary.md and plot.svg into `dir` (which exists).
// INTERNAL naming the file when one cannot be written.
absl::Status WriteRunResults(const std::string& dir,
                             const run_format::RunSummary& summary,
                             const RunRecord& record);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_RUN_SUMMARY_H_
