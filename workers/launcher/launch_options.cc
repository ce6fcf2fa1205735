#include "workers/launcher/launch_options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "entrograd/client.h"
#include "workers/launcher/child_commands.h"
#include "workers/link_emulation/link_rate.h"
#include "workers/run_format/lr_schedule.h"

// Paths of the binaries relative to the launcher's directory in the build
// tree, computed by CMake (workers/launcher/CMakeLists.txt).
#ifndef ENTROGRAD_LAUNCH_AGGREGATOR_RELPATH
#define ENTROGRAD_LAUNCH_AGGREGATOR_RELPATH \
  "../../aggregator/entrograd-aggregator"
#endif
#ifndef ENTROGRAD_LAUNCH_WORKER_RELPATH
#define ENTROGRAD_LAUNCH_WORKER_RELPATH "../fashion_mnist/entrograd-worker"
#endif

namespace entrograd::launcher {

namespace {

namespace fs = std::filesystem;

absl::Status Invalid(absl::string_view flag, absl::string_view requirement,
                     absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " must be ", requirement, " (got ", value, ")"));
}

bool IsExecutableFile(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

// The directory of this executable; empty when /proc is unavailable.
fs::path LauncherDirectory() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : self.parent_path();
}

std::string DefaultBinary(const char* build_tree_relpath) {
  const fs::path dir = LauncherDirectory();
  const fs::path relative(build_tree_relpath);
  if (!dir.empty()) {
    const fs::path in_build_tree = (dir / relative).lexically_normal();
    if (IsExecutableFile(in_build_tree.string())) return in_build_tree.string();
    // Installed: every binary in one bin/ directory.
    const fs::path beside = dir / relative.filename();
    if (IsExecutableFile(beside.string())) return beside.string();
    // Neither exists: name the build-tree path, the likelier mistake.
    return in_build_tree.string();
  }
  return relative.filename().string();
}

}  // namespace

const std::vector<std::string>& KnownPolicies() {
  static const auto* const kPolicies = new std::vector<std::string>{
      "entropy", "entropy_budget", "topk", "threshold", "dense"};
  return *kPolicies;
}

const std::vector<std::string>& KnownModels() {
  static const auto* const kModels =
      new std::vector<std::string>{"cnn", "wide", "vgg"};
  return *kModels;
}

absl::Status ValidateLaunchOptions(const LaunchOptions& options) {
  if (options.workers < 1 || options.workers > 256) {
    return Invalid("workers", "in [1, 256]", absl::StrCat(options.workers));
  }
  if (options.shards < 1 || options.shards > 64) {
    return Invalid("shards", "in [1, 64]", absl::StrCat(options.shards));
  }
  const std::vector<std::string>& policies = KnownPolicies();
  if (std::find(policies.begin(), policies.end(), options.policy) ==
      policies.end()) {
    return Invalid("policy",
                   absl::StrCat("one of ", absl::StrJoin(policies, ", ")),
                   absl::StrCat("\"", options.policy, "\""));
  }
  // A fraction of the entries under every policy; the threshold policy has
  // its own --threshold.
  if (!(options.rho > 0 && options.rho <= 1)) {
    return Invalid("rho", "in (0, 1]", absl::StrCat(options.rho));
  }
  if (!std::isfinite(options.threshold) || options.threshold < 0) {
    return Invalid("threshold", "a finite number >= 0",
                   absl::StrCat(options.threshold));
  }
  if (options.epochs < 1) {
    return Invalid("epochs", ">= 1", absl::StrCat(options.epochs));
  }
  if (options.max_steps < 0) {
    return Invalid("max_steps", ">= 0 (0: no limit)",
                   absl::StrCat(options.max_steps));
  }
  if (options.batch_size < 1) {
    return Invalid("batch_size", ">= 1", absl::StrCat(options.batch_size));
  }
  if (!std::isfinite(options.lr) || options.lr <= 0) {
    return Invalid("lr", "a finite number > 0", absl::StrCat(options.lr));
  }
  if (!(options.momentum >= 0 && options.momentum < 1)) {
    return Invalid("momentum", "in [0, 1)", absl::StrCat(options.momentum));
  }
  const std::vector<std::string>& models = KnownModels();
  if (std::find(models.begin(), models.end(), options.model) == models.end()) {
    return Invalid("model",
                   absl::StrCat("one of ", absl::StrJoin(models, ", ")),
                   absl::StrCat("\"", options.model, "\""));
  }
  if (options.eval_every < 0) {
    return Invalid("eval_every", ">= 0 (0: at each epoch's end)",
                   absl::StrCat(options.eval_every));
  }
  if (options.eval_samples < 0) {
    return Invalid("eval_samples", ">= 0 (0: the whole test set)",
                   absl::StrCat(options.eval_samples));
  }
  if (options.validation < 0 || options.validation >= 60000) {
    return Invalid("validation", "in [0, 60000) (0: none)",
                   absl::StrCat(options.validation));
  }
  if (options.warmup_steps < 0) {
    return Invalid("warmup_steps", ">= 0", absl::StrCat(options.warmup_steps));
  }
  if (options.dense_below < 0) {
    return Invalid("dense_below", ">= 0 (0: every layer compressed)",
                   absl::StrCat(options.dense_below));
  }
  if (!IsValidMergedKeepFactor(options.merged_keep_factor)) {
    return Invalid("merged_keep_factor", "0 (the union) or in [1, 1e6]",
                   absl::StrCat(options.merged_keep_factor));
  }
  if (!ParseLrSchedule(options.lr_schedule).ok()) {
    return Invalid("lr_schedule", "constant or cosine",
                   absl::StrCat("\"", options.lr_schedule, "\""));
  }
  if (!ParseValueType(options.value_type).ok()) {
    return Invalid("value_type", "one of f32, f16, bf16, e5m2",
                   absl::StrCat("\"", options.value_type, "\""));
  }
  if (!options.link.empty()) {
    absl::StatusOr<link_emulation::LinkRate> rate =
        link_emulation::ParseLinkRate(options.link);
    if (!rate.ok()) {
      return Invalid("link",
                     "a rate such as 100mbit, 1gbit, 10gbit or unlimited",
                     absl::StrCat("\"", options.link, "\""));
    }
  }
  if (options.timeout < absl::ZeroDuration()) {
    return Invalid("timeout", "a duration >= 0 (0: no limit)",
                   absl::FormatDuration(options.timeout));
  }
  if (options.out_dir.empty()) {
    return Invalid("out", "a directory path", "\"\"");
  }
  if (options.round_timeout <= absl::ZeroDuration() ||
      options.round_timeout == absl::InfiniteDuration()) {
    return Invalid("round_timeout", "a finite duration > 0",
                   absl::FormatDuration(options.round_timeout));
  }
  if (options.checkpoint_interval < 0) {
    return Invalid("checkpoint_interval", ">= 0 (0: never)",
                   absl::StrCat(options.checkpoint_interval));
  }
  if (options.data_dir.empty()) {
    return Invalid("data_dir", "a directory path", "\"\"");
  }
  // The job id travels in gRPC metadata and file names: keep it plain.
  for (const char c : options.job_id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' &&
        c != '.') {
      return Invalid("job_id", "letters, digits, '-', '_' or '.'",
                     absl::StrCat("\"", options.job_id, "\""));
    }
  }
  if (options.aggregator_start_timeout <= absl::ZeroDuration()) {
    return Invalid("aggregator_start_timeout", "a duration > 0",
                   absl::FormatDuration(options.aggregator_start_timeout));
  }
  if (options.kill_grace < absl::ZeroDuration()) {
    return Invalid("kill_grace", "a duration >= 0",
                   absl::FormatDuration(options.kill_grace));
  }
  return CheckExtraWorkerArgs(options);
}

absl::Status ResolveBinaries(LaunchOptions& options) {
  if (options.aggregator_bin.empty()) {
    options.aggregator_bin = DefaultAggregatorBinary();
  }
  if (options.worker_bin.empty()) options.worker_bin = DefaultWorkerBinary();
  if (!IsExecutableFile(options.aggregator_bin)) {
    return absl::NotFoundError(
        absl::StrCat("--aggregator_bin: no executable file at ",
                     options.aggregator_bin, " (build entrograd-aggregator)"));
  }
  if (!IsExecutableFile(options.worker_bin)) {
    return absl::NotFoundError(
        absl::StrCat("--worker_bin: no executable file at ", options.worker_bin,
                     " (build entrograd-worker)"));
  }
  return absl::OkStatus();
}

std::string DefaultAggregatorBinary() {
  return DefaultBinary(ENTROGRAD_LAUNCH_AGGREGATOR_RELPATH);
}

std::string DefaultWorkerBinary() {
  return DefaultBinary(ENTROGRAD_LAUNCH_WORKER_RELPATH);
}

}  // namespace entrograd::launcher
