#include "workers/launcher/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "workers/launcher/format_units.h"
#include "workers/launcher/plot_scales.h"

namespace entrograd::launcher {

namespace {

constexpr int kWidth = 1200;
constexpr int kHeight = 450;
constexpr double kPanelTop = 110;
constexpr double kPanelHeight = 280;
constexpr double kPanelWidth = 300;
constexpr double kPanelLeft[3] = {75, 470, 865};
constexpr size_t kMaxPoints = 1000;

constexpr const char* kInk = "#222222";
constexpr const char* kMuted = "#666666";
constexpr const char* kGrid = "#e6e6e6";
constexpr const char* kLossColor = "#1f77b4";
constexpr const char* kAccuracyColor = "#2ca02c";
constexpr const char* kWireColor = "#d62728";
constexpr const char* kDenseColor = "#7f7f7f";

std::string Escape(absl::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::vector<PlotPoint> Finite(const std::vector<PlotPoint>& points,
                              bool positive_only = false) {
  std::vector<PlotPoint> out;
  for (const PlotPoint& p : points) {
    if (std::isfinite(p.x) && std::isfinite(p.y) &&
        (!positive_only || p.y > 0)) {
      out.push_back(p);
    }
  }
  return out;
}

// At most kMaxPoints points: bucket means (noisy series) or every k-th
// point plus the last (monotone cumulative series).
std::vector<PlotPoint> Thin(const std::vector<PlotPoint>& points, bool mean) {
  if (points.size() <= kMaxPoints) return points;
  const size_t bucket = (points.size() + kMaxPoints - 1) / kMaxPoints;
  std::vector<PlotPoint> out;
  for (size_t begin = 0; begin < points.size(); begin += bucket) {
    const size_t end = std::min(points.size(), begin + bucket);
    if (!mean) {
      out.push_back(points[begin]);
      continue;
    }
    PlotPoint sum;
    for (size_t i = begin; i < end; ++i) {
      sum.x += points[i].x;
      sum.y += points[i].y;
    }
    out.push_back({sum.x / (end - begin), sum.y / (end - begin)});
  }
  if (!mean && out.back().x != points.back().x) out.push_back(points.back());
  return out;
}

// Centred moving average over about 1/25 of the series: the trend under
// the per-batch noise.
std::vector<PlotPoint> Smooth(const std::vector<PlotPoint>& points) {
  const int half = static_cast<int>(points.size() / 50);
  if (half < 1) return {};
  std::vector<PlotPoint> out;
  const int n = static_cast<int>(points.size());
  for (int i = 0; i < n; ++i) {
    const int lo = std::max(0, i - half);
    const int hi = std::min(n - 1, i + half);
    double sum = 0;
    for (int j = lo; j <= hi; ++j) sum += points[j].y;
    out.push_back({points[i].x, sum / (hi - lo + 1)});
  }
  return out;
}

std::string Number(double value) { return absl::StrFormat("%.1f", value); }

// A log-axis tick: "1 kB", "10 MB", "500 B" (ticks are 1, 2 or 5 x 10^k,
// so the short form is exact).
std::string TickBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int unit = 0;
  while (bytes >= 999.5 && unit < 5) {
    bytes /= 1000;
    ++unit;
  }
  return absl::StrFormat("%g %s", bytes, kUnits[unit]);
}

std::string StepLabel(double step) {
  if (std::fabs(step) >= 10000) return absl::StrFormat("%gk", step / 1000);
  return absl::StrFormat("%g", step);
}

// One panel: a frame with axes, grid and labels, into which series draw.
class Panel {
 public:
  Panel(std::string* svg, double left, Axis x_axis, Axis y_axis)
      : svg_(*svg),
        left_(left),
        x_axis_(std::move(x_axis)),
        y_axis_(std::move(y_axis)) {}

  double X(double value) const {
    return x_axis_.ToPixel(value, left_, left_ + kPanelWidth);
  }
  double Y(double value) const {
    return y_axis_.ToPixel(value, kPanelTop + kPanelHeight, kPanelTop);
  }

  // Grid, ticks and labels; `y_label` formats the y tick values.
  template <typename Format>
  void DrawFrame(absl::string_view title, absl::string_view y_title,
                 Format y_label) {
    const double bottom = kPanelTop + kPanelHeight;
    const double right = left_ + kPanelWidth;
    absl::StrAppendFormat(
        &svg_,
        "<text x=\"%s\" y=\"%s\" font-size=\"15\" font-weight=\"bold\" "
        "fill=\"%s\">%s</text>\n",
        Number(left_), Number(kPanelTop - 14), kInk, Escape(title));
    absl::StrAppendFormat(&svg_,
                          "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" "
                          "fill=\"#fcfcfc\" stroke=\"none\"/>\n",
                          Number(left_), Number(kPanelTop), Number(kPanelWidth),
                          Number(kPanelHeight));
    for (const double tick : y_axis_.ticks) {
      const double y = Y(tick);
      absl::StrAppendFormat(&svg_,
                            "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" "
                            "stroke=\"%s\" stroke-width=\"1\"/>\n",
                            Number(left_), Number(y), Number(right), Number(y),
                            kGrid);
      absl::StrAppendFormat(&svg_,
                            "<text x=\"%s\" y=\"%s\" font-size=\"11\" "
                            "text-anchor=\"end\" fill=\"%s\">%s</text>\n",
                            Number(left_ - 6), Number(y + 4), kMuted,
                            Escape(y_label(tick)));
    }
    for (const double tick : x_axis_.ticks) {
      const double x = X(tick);
      absl::StrAppendFormat(&svg_,
                            "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" "
                            "stroke=\"%s\" stroke-width=\"1\"/>\n",
                            Number(x), Number(kPanelTop), Number(x),
                            Number(bottom), kGrid);
      absl::StrAppendFormat(&svg_,
                            "<text x=\"%s\" y=\"%s\" font-size=\"11\" "
                            "text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
                            Number(x), Number(bottom + 16), kMuted,
                            Escape(StepLabel(tick)));
    }
    // Axes: left and bottom.
    absl::StrAppendFormat(
        &svg_,
        "<polyline points=\"%s,%s %s,%s %s,%s\" fill=\"none\" "
        "stroke=\"%s\" stroke-width=\"1.2\"/>\n",
        Number(left_), Number(kPanelTop), Number(left_), Number(bottom),
        Number(right), Number(bottom), kInk);
    absl::StrAppendFormat(&svg_,
                          "<text x=\"%s\" y=\"%s\" font-size=\"12\" "
                          "text-anchor=\"middle\" fill=\"%s\">step</text>\n",
                          Number(left_ + kPanelWidth / 2), Number(bottom + 36),
                          kInk);
    const double label_x = left_ - 56;
    const double label_y = kPanelTop + kPanelHeight / 2;
    absl::StrAppendFormat(
        &svg_,
        "<text x=\"%s\" y=\"%s\" font-size=\"12\" text-anchor=\"middle\" "
        "fill=\"%s\" transform=\"rotate(-90 %s %s)\">%s</text>\n",
        Number(label_x), Number(label_y), kInk, Number(label_x),
        Number(label_y), Escape(y_title));
  }

  void DrawLine(const std::vector<PlotPoint>& points, absl::string_view color,
                double width, absl::string_view extra = "") {
    if (points.empty()) return;
    std::vector<std::string> coordinates;
    coordinates.reserve(points.size());
    for (const PlotPoint& p : points) {
      coordinates.push_back(absl::StrCat(Number(X(p.x)), ",", Number(Y(p.y))));
    }
    absl::StrAppendFormat(&svg_,
                          "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"%g\" stroke-linejoin=\"round\" "
                          "stroke-linecap=\"round\"%s/>\n",
                          absl::StrJoin(coordinates, " "), color, width, extra);
  }

  void DrawDots(const std::vector<PlotPoint>& points, absl::string_view color) {
    for (const PlotPoint& p : points) {
      absl::StrAppendFormat(&svg_,
                            "<circle cx=\"%s\" cy=\"%s\" r=\"4\" fill=\"%s\" "
                            "stroke=\"white\" stroke-width=\"1.5\"/>\n",
                            Number(X(p.x)), Number(Y(p.y)), color);
    }
  }

  void DrawText(double x, double y, absl::string_view text,
                absl::string_view color, absl::string_view anchor = "start",
                int size = 11) {
    absl::StrAppendFormat(&svg_,
                          "<text x=\"%s\" y=\"%s\" font-size=\"%d\" "
                          "text-anchor=\"%s\" fill=\"%s\">%s</text>\n",
                          Number(x), Number(y), size, anchor, color,
                          Escape(text));
  }

  void DrawNoData() {
    DrawText(left_ + kPanelWidth / 2, kPanelTop + kPanelHeight / 2, "no data",
             kMuted, "middle", 13);
  }

  // A legend of (colour, style, label) rows in a corner of the panel the
  // data leaves free.
  struct LegendRow {
    std::string color;
    std::string style;  // more stroke attributes, as DrawLine's `extra`
    std::string label;
  };
  enum class Corner { kTopRight, kBottomRight };
  void DrawLegend(const std::vector<LegendRow>& rows, Corner corner) {
    constexpr double kLegendWidth = 138;
    const double height = 8 + 18.0 * rows.size();
    const double x = left_ + kPanelWidth - kLegendWidth - 10;
    const double y = corner == Corner::kTopRight
                         ? kPanelTop + 10
                         : kPanelTop + kPanelHeight - height - 10;
    absl::StrAppendFormat(&svg_,
                          "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" "
                          "rx=\"3\" fill=\"white\" fill-opacity=\"0.9\" "
                          "stroke=\"#cccccc\"/>\n",
                          Number(x), Number(y), Number(kLegendWidth),
                          Number(height));
    for (size_t i = 0; i < rows.size(); ++i) {
      const double row_y = y + 16 + 18.0 * i;
      absl::StrAppendFormat(
          &svg_,
          "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" "
          "stroke-width=\"2.5\"%s/>\n",
          Number(x + 8), Number(row_y - 4), Number(x + 32), Number(row_y - 4),
          rows[i].color, rows[i].style);
      DrawText(x + 40, row_y, rows[i].label, kInk);
    }
  }

  double right() const { return left_ + kPanelWidth; }

 private:
  std::string& svg_;
  double left_;
  Axis x_axis_;
  Axis y_axis_;
};

Axis StepAxis(const TrainingPlot& plot) {
  double lo = INFINITY;
  double hi = -INFINITY;
  for (const auto* series :
       {&plot.loss, &plot.accuracy, &plot.wire_bytes, &plot.dense_bytes}) {
    for (const PlotPoint& p : *series) {
      if (!std::isfinite(p.x)) continue;
      lo = std::min(lo, p.x);
      hi = std::max(hi, p.x);
    }
  }
  if (lo > hi) {
    lo = 0;
    hi = 1;
  }
  return LinearAxis(std::min(lo, 0.0), hi, 5, /*integer_step=*/true);
}

void DrawLossPanel(std::string* svg, const Axis& steps,
                   const TrainingPlot& plot) {
  const std::vector<PlotPoint> loss = Thin(Finite(plot.loss), /*mean=*/true);
  double hi = 0;
  for (const PlotPoint& p : loss) hi = std::max(hi, p.y);
  double lo = 0;
  for (const PlotPoint& p : loss) lo = std::min(lo, p.y);
  Panel panel(svg, kPanelLeft[0], steps,
              LinearAxis(lo, hi > lo ? hi : lo + 1, 5));
  panel.DrawFrame("Training loss", "loss (mean over ranks)",
                  [](double v) { return absl::StrFormat("%g", v); });
  if (loss.empty()) {
    panel.DrawNoData();
    return;
  }
  const std::vector<PlotPoint> smooth = Smooth(loss);
  if (smooth.empty()) {
    panel.DrawLine(loss, kLossColor, 2);
    if (loss.size() == 1) panel.DrawDots(loss, kLossColor);
    return;
  }
  panel.DrawLine(loss, kLossColor, 1, " stroke-opacity=\"0.3\"");
  panel.DrawLine(smooth, kLossColor, 2.2);
  // Loss falls: the top right is free.
  panel.DrawLegend({{kLossColor, " stroke-opacity=\"0.3\"", "per step"},
                    {kLossColor, "", "moving average"}},
                   Panel::Corner::kTopRight);
}

void DrawAccuracyPanel(std::string* svg, const Axis& steps,
                       const TrainingPlot& plot) {
  std::vector<PlotPoint> accuracy = Finite(plot.accuracy);
  double lo = 1;
  double hi = 0;
  for (const PlotPoint& p : accuracy) {
    lo = std::min(lo, p.y);
    hi = std::max(hi, p.y);
  }
  Axis y_axis = accuracy.empty() ? LinearAxis(0, 1, 5)
                                 : LinearAxis(std::max(0.0, lo - 0.05),
                                              std::min(1.0, hi + 0.05), 5);
  Panel panel(svg, kPanelLeft[1], steps, y_axis);
  panel.DrawFrame("Test accuracy", "accuracy (rank 0, after each epoch)",
                  [](double v) { return absl::StrFormat("%g%%", v * 100); });
  if (accuracy.empty()) {
    panel.DrawNoData();
    return;
  }
  panel.DrawLine(accuracy, kAccuracyColor, 2.2);
  panel.DrawDots(accuracy, kAccuracyColor);
  const PlotPoint& last = accuracy.back();
  const double x = panel.X(last.x);
  // Label the final accuracy, inside the panel whichever end it is near.
  const bool near_right = x > panel.right() - 60;
  panel.DrawText(near_right ? x - 8 : x + 8, panel.Y(last.y) - 10,
                 FormatPercent(last.y), kAccuracyColor,
                 near_right ? "end" : "start", 12);
}

void DrawBytesPanel(std::string* svg, const Axis& steps,
                    const TrainingPlot& plot) {
  const std::vector<PlotPoint> wire =
      Thin(Finite(plot.wire_bytes, /*positive_only=*/true), /*mean=*/false);
  const std::vector<PlotPoint> dense =
      Thin(Finite(plot.dense_bytes, /*positive_only=*/true), /*mean=*/false);
  double lo = INFINITY;
  double hi = 0;
  for (const auto* series : {&wire, &dense}) {
    for (const PlotPoint& p : *series) {
      lo = std::min(lo, p.y);
      hi = std::max(hi, p.y);
    }
  }
  Panel panel(svg, kPanelLeft[2], steps, LogAxis(lo, hi));
  panel.DrawFrame("Cumulative bytes (log scale)", "bytes, all ranks",
                  [](double v) { return TickBytes(v); });
  if (wire.empty() && dense.empty()) {
    panel.DrawNoData();
    return;
  }
  panel.DrawLine(dense, kDenseColor, 2.2, " stroke-dasharray=\"7 4\"");
  panel.DrawLine(wire, kWireColor, 2.2);
  // Cumulative bytes rise: the bottom right is free.
  panel.DrawLegend(
      {{kWireColor, "", "on the wire"},
       {kDenseColor, " stroke-dasharray=\"7 4\"", "dense float32"}},
      Panel::Corner::kBottomRight);
  if (!wire.empty() && !dense.empty() && wire.back().y > 0) {
    // The gap between the two lines at the end is the compression ratio:
    // bracket it and say it.
    const double ratio = dense.back().y / wire.back().y;
    const double x = panel.X(wire.back().x) - 8;
    const double top = panel.Y(dense.back().y) + 4;
    const double bottom = panel.Y(wire.back().y) - 4;
    if (bottom > top) {
      absl::StrAppendFormat(
          svg,
          "<polyline points=\"%s,%s %s,%s %s,%s %s,%s\" fill=\"none\" "
          "stroke=\"%s\" stroke-width=\"1\"/>\n",
          Number(x + 4), Number(top), Number(x), Number(top), Number(x),
          Number(bottom), Number(x + 4), Number(bottom), kInk);
    }
    panel.DrawText(x - 5, (top + bottom) / 2 + 4,
                   absl::StrCat(FormatRatio(ratio), " less"), kInk, "end", 12);
  }
}

}  // namespace

std::string RenderTrainingPlot(const TrainingPlot& plot) {
  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\">\n"
      "<g font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
      kWidth, kHeight, kWidth, kHeight, kWidth, kHeight);
  absl::StrAppendFormat(&svg,
                        "<text x=\"25\" y=\"34\" font-size=\"20\" "
                        "font-weight=\"bold\" fill=\"%s\">%s</text>\n",
                        kInk, Escape(plot.title));
  absl::StrAppendFormat(&svg,
                        "<text x=\"25\" y=\"58\" font-size=\"13\" "
                        "fill=\"%s\">%s</text>\n",
                        kMuted, Escape(plot.subtitle));
  const Axis steps = StepAxis(plot);
  DrawLossPanel(&svg, steps, plot);
  DrawAccuracyPanel(&svg, steps, plot);
  DrawBytesPanel(&svg, steps, plot);
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace entrograd::launcher
