#include "entrograd_cli/inspect_flags.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "entrograd/common/status_macros.h"

namespace entrograd::cli {

const char kInspectUsage[] =
    R"(usage: entrograd-cli inspect [options] FILE...

For each layer's gradient FILE, shows its interval entropy (ALGORITHM.md
5.2-5.3), how many entries the keep policy sends on a first training step
(residual 0, no momentum), and what those entries cost on the wire (index
bytes + float32 value bytes) under each index encoding, with the encoding the
automatic choice picks.

FILE is one layer's gradient:
  *.npy   NumPy array, dtype '<f4' (little-endian float32), C order, any
          shape (flattened row-major); format versions 1.0, 2.0, 3.0
  *.f32   raw little-endian float32, no header

options:
  --policy P        keep policy: entropy (default), entropy_budget, topk,
                    threshold, dense. entropy_budget shares one density over
                    all the FILEs given, in proportion to n * exp(H) / m.
  --rho R           density, 0 < R <= 1 (default 0.01): what a layer of
                    maximal entropy keeps (entropy), the fixed share (topk),
                    or the global budget density D (entropy_budget)
  --threshold T     keep every |value| >= T under the threshold policy
                    (default 0.001)
  --intervals M     maximum number of entropy intervals, >= 1 (default 256)
  --dense_below N   send layers with fewer than N elements dense, as training
                    does for biases and norms (the library's default is
                    1024). Default here 0, so a small file is still shown
                    compressed.
  --json            print one JSON object instead of a table:
                    {"layers": [{"name", "numel", "entropy",
                    "normalized_entropy", "effective_fraction", "keep_ratio",
                    "k", "encoded_bytes": {"raw_u32", "delta_varint",
                    "bitmap", "dense", "gap_range"}, "auto_encoding"}, ...]}
  -h, --help        print this help

exit status: 0 success, 1 a file could not be read or inspected, 2 bad usage
)";

namespace {

// Flags that take a value. --json and --help take none.
enum class ValueFlag { kPolicy, kRho, kThreshold, kIntervals, kDenseBelow };

std::optional<ValueFlag> FindValueFlag(absl::string_view name) {
  if (name == "--policy") return ValueFlag::kPolicy;
  if (name == "--rho") return ValueFlag::kRho;
  if (name == "--threshold") return ValueFlag::kThreshold;
  if (name == "--intervals") return ValueFlag::kIntervals;
  if (name == "--dense_below") return ValueFlag::kDenseBelow;
  return std::nullopt;
}

absl::StatusOr<double> ParseDouble(absl::string_view flag,
                                   absl::string_view text) {
  double value = 0.0;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": expected a number, got '", text, "'"));
  }
  return value;
}

absl::StatusOr<int64_t> ParseInt(absl::string_view flag,
                                 absl::string_view text) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": expected an integer, got '", text, "'"));
  }
  return value;
}

absl::Status ApplyValueFlag(ValueFlag flag, absl::string_view name,
                            absl::string_view value,
                            CompressionOptions* options) {
  switch (flag) {
    case ValueFlag::kPolicy: {
      absl::StatusOr<KeepPolicy> policy = ParseKeepPolicy(value);
      if (!policy.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", policy.status().message()));
      }
      options->policy = *policy;
      return absl::OkStatus();
    }
    case ValueFlag::kRho: {
      ENTROGRAD_ASSIGN_OR_RETURN(options->rho, ParseDouble(name, value));
      return absl::OkStatus();
    }
    case ValueFlag::kThreshold: {
      ENTROGRAD_ASSIGN_OR_RETURN(options->threshold, ParseDouble(name, value));
      return absl::OkStatus();
    }
    case ValueFlag::kIntervals: {
      ENTROGRAD_ASSIGN_OR_RETURN(options->intervals, ParseInt(name, value));
      return absl::OkStatus();
    }
    case ValueFlag::kDenseBelow: {
      ENTROGRAD_ASSIGN_OR_RETURN(options->dense_below, ParseInt(name, value));
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unhandled flag");
}

}  // namespace

absl::StatusOr<InspectFlags> ParseInspectFlags(
    absl::Span<const std::string> args) {
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h") {
      InspectFlags flags;
      flags.help = true;
      return flags;
    }
  }

  InspectFlags flags;
  flags.options.dense_below = 0;
  bool flags_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_ended || arg == "-" || !absl::StartsWith(arg, "-")) {
      flags.files.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    if (arg == "--json") {
      flags.json = true;
      continue;
    }
    const size_t equals = arg.find('=');
    const absl::string_view name = absl::string_view(arg).substr(0, equals);
    if (name == "--json") {
      return absl::InvalidArgumentError("--json takes no value");
    }
    const std::optional<ValueFlag> flag = FindValueFlag(name);
    if (!flag.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag '", name, "'; see entrograd-cli inspect --help"));
    }
    absl::string_view value;
    if (equals != std::string::npos) {
      value = absl::string_view(arg).substr(equals + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
    }
    ENTROGRAD_RETURN_IF_ERROR(
        ApplyValueFlag(*flag, name, value, &flags.options));
  }

  // One flag serves both densities, so the budget policy is checked with the
  // same range as rho.
  flags.options.budget_density = flags.options.rho;
  const absl::Status valid = ValidateCompressionOptions(flags.options);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad flag value: ", valid.message()));
  }
  if (flags.files.empty()) {
    return absl::InvalidArgumentError(
        "no FILE given; see entrograd-cli inspect --help");
  }
  return flags;
}

}  // namespace entrograd::cli
