#include "entrograd_cli/inspect_report.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "entrograd/codec.h"
#include "nlohmann/json.hpp"

namespace entrograd::cli {
namespace {

size_t EncodingSlot(IndexEncoding encoding) {
  for (size_t e = 0; e < kIndexEncodingCount; ++e) {
    if (kAllIndexEncodings[e] == encoding) return e;
  }
  return 0;
}

// Columns of the table: header and one cell per layer; names left-aligned,
// numbers right-aligned.
struct Column {
  std::string header;
  bool left_aligned = false;
  std::vector<std::string> cells;
};

std::string RenderColumns(const std::vector<Column>& columns) {
  std::vector<size_t> widths;
  for (const Column& column : columns) {
    size_t width = column.header.size();
    for (const std::string& cell : column.cells) {
      width = std::max(width, cell.size());
    }
    widths.push_back(width);
  }
  const auto render_row = [&](auto cell_of) {
    std::string line;
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string& cell = cell_of(columns[c]);
      const std::string padding(widths[c] - cell.size(), ' ');
      if (c > 0) line += "  ";
      if (columns[c].left_aligned) {
        // No trailing spaces after the last column.
        line += c + 1 == columns.size() ? cell : cell + padding;
      } else {
        line += padding + cell;
      }
    }
    return line + "\n";
  };
  std::string table = render_row(
      [](const Column& column) -> const std::string& { return column.header; });
  const size_t rows = columns.empty() ? 0 : columns[0].cells.size();
  for (size_t r = 0; r < rows; ++r) {
    table += render_row([r](const Column& column) -> const std::string& {
      return column.cells[r];
    });
  }
  return table;
}

std::string PolicyLine(const CompressionOptions& options) {
  std::string line = absl::StrCat("policy ", KeepPolicyName(options.policy));
  switch (options.policy) {
    case KeepPolicy::kEntropy:
    case KeepPolicy::kTopK:
      absl::StrAppend(&line, ", rho ", options.rho);
      break;
    case KeepPolicy::kEntropyBudget:
      absl::StrAppend(&line, ", budget density ", options.budget_density);
      break;
    case KeepPolicy::kThreshold:
      absl::StrAppend(&line, ", threshold ", options.threshold);
      break;
    case KeepPolicy::kDense:
      break;
  }
  absl::StrAppend(&line, ", intervals ", options.intervals, ", dense_below ",
                  options.dense_below,
                  "; bytes = index + float32 values on the wire\n");
  return line;
}

}  // namespace


std::string FormatInspectJson(absl::Span<const LayerInspection> layers) {
  // Ordered: members in the order the header documents.
  using Json = nlohmann::ordered_json;
  Json rows = Json::array();
  for (const LayerInspection& layer : layers) {
    Json bytes = Json::object();
    for (size_t e = 0; e < kIndexEncodingCount; ++e) {
      bytes[std::string(IndexEncodingName(kAllIndexEncodings[e]))] =
          layer.encoded_bytes[e];
    }
    Json row = Json::object();
    row["name"] = layer.name;
    row["numel"] = layer.numel;
    row["entropy"] = layer.entropy.entropy;
    row["normalized_entropy"] = layer.entropy.normalized_entropy;
    row["effective_fraction"] = layer.entropy.effective_fraction;
    row["keep_ratio"] = layer.keep_ratio;
    row["k"] = layer.k;
    row["encoded_bytes"] = std::move(bytes);
    row["auto_encoding"] = std::string(IndexEncodingName(layer.auto_encoding));
    rows.push_back(std::move(row));
  }
  Json report = Json::object();
  report["layers"] = std::move(rows);
  // File names are bytes: invalid UTF-8 becomes U+FFFD rather than an
  // exception.
  return report.dump(/*indent=*/2, ' ', /*ensure_ascii=*/false,
                     Json::error_handler_t::replace) +
         "\n";
}

std::string FormatInspectTable(absl::Span<const LayerInspection> layers,
                               const CompressionOptions& options) {
  std::vector<Column> columns = {
      {"name", true, {}},
      {"numel", false, {}},
      {"entropy", false, {}},
      {"norm_entropy", false, {}},
      {"eff_fraction", false, {}},
      {"keep_ratio", false, {}},
      {"k", false, {}},
  };
  for (IndexEncoding encoding : kAllIndexEncodings) {
    columns.push_back({std::string(IndexEncodingName(encoding)), false, {}});
  }
  columns.push_back({"auto", true, {}});

  int64_t total_numel = 0;
  int64_t total_k = 0;
  int64_t total_auto_bytes = 0;
  for (const LayerInspection& layer : layers) {
    size_t c = 0;
    columns[c++].cells.push_back(layer.name);
    columns[c++].cells.push_back(absl::StrCat(layer.numel));
    columns[c++].cells.push_back(
        absl::StrFormat("%.4f", layer.entropy.entropy));
    columns[c++].cells.push_back(
        absl::StrFormat("%.4f", layer.entropy.normalized_entropy));
    columns[c++].cells.push_back(
        absl::StrFormat("%.4f", layer.entropy.effective_fraction));
    columns[c++].cells.push_back(absl::StrFormat("%.6g", layer.keep_ratio));
    columns[c++].cells.push_back(
        absl::StrCat(layer.k, layer.dense ? " (dense)" : ""));
    for (size_t e = 0; e < kIndexEncodingCount; ++e) {
      columns[c++].cells.push_back(absl::StrCat(layer.encoded_bytes[e]));
    }
    columns[c++].cells.push_back(
        std::string(IndexEncodingName(layer.auto_encoding)));
    total_numel += layer.numel;
    total_k += layer.k;
    total_auto_bytes += layer.encoded_bytes[EncodingSlot(layer.auto_encoding)];
  }

  const int64_t dense_bytes = total_numel * 4;
  std::string total = absl::StrCat(
      "total: ", layers.size(), layers.size() == 1 ? " layer, " : " layers, ",
      total_numel, " elements, ", total_k, " sent; ", total_auto_bytes,
      " bytes with the automatic encoding vs ", dense_bytes,
      " bytes dense float32");
  if (total_auto_bytes > 0) {
    absl::StrAppend(&total, absl::StrFormat(" (%.1fx smaller)",
                                            static_cast<double>(dense_bytes) /
                                                total_auto_bytes));
  }
  return absl::StrCat(PolicyLine(options), RenderColumns(columns), total, "\n");
}

}  // namespace entrograd::cli
