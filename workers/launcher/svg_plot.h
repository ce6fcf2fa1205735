// plot.svg: a hand-written SVG of a run in three panels sharing the step
// axis: training loss per step, test accuracy per evaluation, and the
// cumulative bytes on the wire against the dense float32 equivalent on a
// log scale. Self-contained (no scripts, no external fonts or styles), so it
// renders the same in a browser, an image viewer or a Markdown preview.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_SVG_PLOT_H_
#define ENTROGRAD_WORKERS_LAUNCHER_SVG_PLOT_H_

#include <string>
#include <vector>

namespace entrograd::launcher {

struct PlotPoint {
  double x = 0;
  double y = 0;
};

struct TrainingPlot {
  std::string title;
  std::string subtitle;
  std::vector<PlotPoint> loss;         // (step, mean loss over ranks)
  std::vector<PlotPoint> accuracy;     // (step, test accuracy in [0, 1])
  std::vector<PlotPoint> wire_bytes;   // (step, cumulative bytes, all ranks)
  std::vector<PlotPoint> dense_bytes;  // (step, cumulative dense equivalent)
};

// The SVG document. Series may be empty (the panel says "no data");
// non-finite values are left out, and long series are thinned to about a
// thousand points so the file stays small.
std::string RenderTrainingPlot(const TrainingPlot& plot);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_SVG_PLOT_H_
