#include "workers/launcher/svg_plot.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/launcher/plot_scales.h"

namespace entrograd::launcher {
namespace {

using ::testing::HasSubstr;

// Checks XML well-formedness the simple way: every tag closes in order,
// attributes are quoted, and text has no bare '<' or '&'. Returns an error
// description, empty when fine.
std::string CheckWellFormed(const std::string& xml) {
  std::vector<std::string> open;
  size_t pos = 0;
  if (absl::StartsWith(xml, "<?xml")) pos = xml.find("?>") + 2;
  while (pos < xml.size()) {
    const size_t lt = xml.find('<', pos);
    const std::string text =
        xml.substr(pos, lt == std::string::npos ? std::string::npos : lt - pos);
    for (size_t amp = text.find('&'); amp != std::string::npos;
         amp = text.find('&', amp + 1)) {
      const size_t semi = text.find(';', amp);
      if (semi == std::string::npos || semi - amp > 6) {
        return "bare '&' in text: " + text;
      }
    }
    if (text.find('>') != std::string::npos) return "bare '>' in " + text;
    if (lt == std::string::npos) break;
    const size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return "unclosed tag at " + std::to_string(lt);
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside tag " + tag;
    size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2 != 0) return "unbalanced quotes in " + tag;
    if (absl::StartsWith(tag, "/")) {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        return "closing " + name + " but open is " +
               (open.empty() ? std::string("nothing") : open.back());
      }
      open.pop_back();
    } else if (!absl::EndsWith(tag, "/")) {
      open.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
    }
    pos = gt + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TrainingPlot SamplePlot(int steps) {
  TrainingPlot plot;
  plot.title = "entrograd local-1 <&>";
  plot.subtitle = "policy \"entropy\", rho 0.01";
  for (int s = 0; s < steps; ++s) {
    plot.loss.push_back({double(s), 2.3 * std::exp(-s / 200.0) + 0.3});
    plot.wire_bytes.push_back({double(s), 4000.0 * (s + 1)});
    plot.dense_bytes.push_back({double(s), 400000.0 * (s + 1)});
  }
  plot.accuracy = {{steps / 2.0, 0.81}, {double(steps), 0.85}};
  return plot;
}

TEST(SvgPlotTest, IsWellFormedWithAllSeries) {
  const std::string svg = RenderTrainingPlot(SamplePlot(500));
  EXPECT_EQ(CheckWellFormed(svg), "");
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  // Loss raw + smoothed, accuracy, wire and dense, plus the three axes.
  EXPECT_GE(Count(svg, "<polyline"), 8u);
  EXPECT_THAT(svg, HasSubstr("stroke=\"#1f77b4\""));  // loss
  EXPECT_THAT(svg, HasSubstr("stroke=\"#2ca02c\""));  // accuracy
  EXPECT_THAT(svg, HasSubstr("stroke=\"#d62728\""));  // wire bytes
  EXPECT_THAT(svg, HasSubstr("stroke-dasharray"));    // dense bytes
  for (const char* label :
       {"Training loss", "Test accuracy", "Cumulative bytes (log scale)",
        "on the wire", "dense float32", "step", "100x less", "85.00%"}) {
    EXPECT_THAT(svg, HasSubstr(label));
  }
  // The title was escaped.
  EXPECT_THAT(svg, HasSubstr("entrograd local-1 &lt;&amp;&gt;"));
  EXPECT_THAT(svg, HasSubstr("policy &quot;entropy&quot;"));
}

TEST(SvgPlotTest, LogAxisHasDecadeLabels) {
  const std::string svg = RenderTrainingPlot(SamplePlot(500));
  for (const char* label : {"1 kB", "10 kB", "1 MB", "100 MB", "1 GB"}) {
    EXPECT_THAT(svg, HasSubstr(std::string(">") + label + "<")) << label;
  }
}

TEST(SvgPlotTest, EmptyAndTinyRunsStillRender) {
  const std::string empty = RenderTrainingPlot(TrainingPlot{});
  EXPECT_EQ(CheckWellFormed(empty), "");
  EXPECT_EQ(Count(empty, "no data"), 3u);

  TrainingPlot one;
  one.loss = {{0, 2.3}};
  one.wire_bytes = {{0, 100}};
  one.dense_bytes = {{0, 10000}};
  one.accuracy = {{1, 0.1}};
  const std::string svg = RenderTrainingPlot(one);
  EXPECT_EQ(CheckWellFormed(svg), "");
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SvgPlotTest, DropsNonFiniteValuesAndThinsLongSeries) {
  TrainingPlot plot = SamplePlot(20000);
  plot.loss[10].y = NAN;
  plot.loss[11].y = INFINITY;
  const std::string svg = RenderTrainingPlot(plot);
  EXPECT_EQ(CheckWellFormed(svg), "");
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_LT(svg.size(), 200000u);
}

TEST(PlotScalesTest, LinearTicksAreNice) {
  const Axis axis = LinearAxis(0, 2.31, 5);
  EXPECT_EQ(axis.min, 0);
  EXPECT_DOUBLE_EQ(axis.max, 2.5);
  EXPECT_THAT(axis.ticks, ::testing::ElementsAre(0, 0.5, 1, 1.5, 2, 2.5));
  const Axis steps = LinearAxis(0, 3, 5, /*integer_step=*/true);
  EXPECT_THAT(steps.ticks, ::testing::ElementsAre(0, 1, 2, 3));
  const Axis flat = LinearAxis(7, 7, 5);
  EXPECT_LT(flat.min, 7);
  EXPECT_GT(flat.max, 7);
  EXPECT_DOUBLE_EQ(axis.ToPixel(1.25, 100, 0), 50);
}

TEST(PlotScalesTest, LogTicksAreDecades) {
  const Axis axis = LogAxis(3000, 2.5e6);
  EXPECT_EQ(axis.min, 1000);
  EXPECT_EQ(axis.max, 1e7);
  EXPECT_THAT(axis.ticks, ::testing::ElementsAre(1e3, 1e4, 1e5, 1e6, 1e7));
  EXPECT_DOUBLE_EQ(axis.ToPixel(1e5, 0, 400), 200);
  const Axis narrow = LogAxis(200, 300);
  EXPECT_THAT(narrow.ticks, ::testing::ElementsAre(100, 200, 500, 1000));
  const Axis wide = LogAxis(1, 1e12);
  EXPECT_EQ(wide.ticks.size(), 7u);  // every other decade
}

}  // namespace
}  // namespace entrograd::launcher
