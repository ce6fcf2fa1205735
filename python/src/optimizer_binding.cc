// _C.DistributedOptimizer: entrograd::DistributedOptimizer for Python.
//
// The compression runs in the C++ gradient hooks (no Python per tensor per
// step); step() releases the GIL for the whole wait-and-apply, so other
// Python threads (data loading) run meanwhile. Owns the C++ optimizer; keeps
// the Python client alive (the C++ optimizer holds its Client*).
//
// Thread safety: the C++ optimizer's Step, SaveState and LoadState must not
// overlap. Calls from Python are serialised by the GIL except while one of
// them runs with the GIL released; a call from another thread meanwhile is
// refused (FAILED_PRECONDITION) instead of racing it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "python/src/bindings.h"
#include "python/src/gradients_only_optimizer.h"
#include "python/src/optimizer_state.h"
#include "python/src/py_client.h"
#include "python/src/status_error.h"
#include "python/src/tensor_checks.h"

namespace entrograd::python {

namespace py = pybind11;

namespace {

// What one step() did: DistributedOptimizer's StepTiming and the client's
// byte counters over the step (counted when handed to gRPC or received, so
// a step's bytes can straddle the step boundary by a layer).
struct StepStats {
  int64_t step = 0;  // the step just completed
  double compress_seconds = 0;
  double wait_seconds = 0;
  double apply_seconds = 0;
  int64_t uplink_wire_bytes = 0;
  int64_t uplink_dense_bytes = 0;
  int64_t downlink_wire_bytes = 0;
  int64_t downlink_dense_bytes = 0;
};

class PyDistributedOptimizer {
 public:
  // Marks a call that releases the GIL; read and written with the GIL held.
  class Exclusive {
   public:
    Exclusive(bool& running, const char* call) : running_(running) {
      if (running_) {
        throw StatusError(absl::FailedPreconditionError(absl::StrCat(
            call,
            ": another thread is in step(), state_dict() or a load of "
            "this optimizer")));
      }
      running_ = true;
    }
    ~Exclusive() { running_ = false; }

   private:
    bool& running_;
  };

  PyDistributedOptimizer(const NamedTensors& parameters, PyClient& client,
                         const CompressionOptions& compression,
                         double learning_rate, double weight_decay,
                         int64_t first_step, double merged_keep_factor,
                         bool accumulate_in_update_space)
      : client_(client) {
    std::vector<torch::Tensor> tensors;
    for (const auto& [name, tensor] : parameters) {
      CheckParameter(name, tensor);
      tensors.push_back(tensor);
    }
    DistributedOptimizerOptions options;
    options.compression = compression;
    options.learning_rate = learning_rate;
    options.weight_decay = weight_decay;
    options.merged_keep_factor = merged_keep_factor;
    options.accumulate_in_update_space = accumulate_in_update_space;
    options.metrics = client.metrics();  // nullptr: none
    if (!compression.momentum_correction) {
      inner_ = std::make_unique<GradientsOnlyOptimizer>(tensors);
      options.inner_optimizer = inner_.get();
    }
    absl::StatusOr<std::unique_ptr<DistributedOptimizer>> optimizer =
        DistributedOptimizer::Create(parameters, options,
                                     client.Connected("DistributedOptimizer"),
                                     first_step);
    ThrowIfError(optimizer.status());
    optimizer_ = std::move(*optimizer);
    step_ = optimizer_->step();
    last_traffic_ = client_.Traffic();
  }

  StepStats Step() {
    Exclusive exclusive(running_, "step()");
    absl::Status status;
    const int64_t step = step_;
    {
      py::gil_scoped_release release;
      status = optimizer_->Step();
    }
    ThrowIfError(status);
    step_ = optimizer_->step();
    const StepTiming& timing = optimizer_->last_timing();
    const ClientTraffic traffic = client_.Traffic();
    StepStats stats;
    stats.step = step;
    stats.compress_seconds = timing.compress_seconds;
    stats.wait_seconds = timing.wait_seconds;
    stats.apply_seconds = timing.apply_seconds;
    stats.uplink_wire_bytes =
        traffic.uplink_wire_bytes - last_traffic_.uplink_wire_bytes;
    stats.uplink_dense_bytes =
        traffic.uplink_dense_bytes - last_traffic_.uplink_dense_bytes;
    stats.downlink_wire_bytes =
        traffic.downlink_wire_bytes - last_traffic_.downlink_wire_bytes;
    stats.downlink_dense_bytes =
        traffic.downlink_dense_bytes - last_traffic_.downlink_dense_bytes;
    last_traffic_ = traffic;
    return stats;
  }

  // The step the next backward belongs to, as of the last completed call
  // (readable while step() runs on another thread).
  int64_t step() const { return step_; }
  bool busy() const { return running_; }

  double LearningRate() const { return optimizer_->learning_rate(); }

  // One dict per layer, in the parameters' order: name, numel, steps,
  // sent_entries, merged_entries, sent_share, merged_share.
  py::list LayerTotals() {
    Exclusive exclusive(running_, "layer_totals()");
    py::list layers;
    for (const entrograd::LayerTotals& totals : optimizer_->layer_totals()) {
      py::dict layer;
      layer["name"] = totals.name;
      layer["numel"] = totals.numel;
      layer["steps"] = totals.steps;
      layer["sent_entries"] = totals.sent_entries;
      layer["merged_entries"] = totals.merged_entries;
      layer["sent_share"] = totals.sent_share();
      layer["merged_share"] = totals.merged_share();
      layers.append(std::move(layer));
    }
    return layers;
  }
  void SetLearningRate(double learning_rate) {
    Exclusive exclusive(running_, "setting lr");
    ThrowIfError(optimizer_->set_learning_rate(learning_rate));
  }

  void SaveState(const std::string& path) {
    Exclusive exclusive(running_, "save_state()");
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = optimizer_->SaveState(path);
    }
    ThrowIfError(status);
  }

  void LoadState(const std::string& path) {
    Exclusive exclusive(running_, "load_state()");
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = optimizer_->LoadState(path);
    }
    ThrowIfError(status);
    step_ = optimizer_->step();
  }

  py::dict StateDict() {
    TemporaryFile file;
    SaveState(file.path());
    return ReadStateFile(file.path());
  }

  void LoadStateDict(const py::dict& state) {
    TemporaryFile file;
    WriteStateFile(state, file.path());
    LoadState(file.path());
  }

 private:
  PyClient& client_;
  std::unique_ptr<GradientsOnlyOptimizer> inner_;
  std::unique_ptr<DistributedOptimizer> optimizer_;
  ClientTraffic last_traffic_;
  int64_t step_ = 0;
  bool running_ = false;  // a call is in flight with the GIL released
};

}  // namespace

void RegisterDistributedOptimizer(py::module_& module) {
  py::class_<StepStats>(module, "StepStats")
      .def_readonly("step", &StepStats::step)
      .def_readonly("compress_seconds", &StepStats::compress_seconds)
      .def_readonly("wait_seconds", &StepStats::wait_seconds)
      .def_readonly("apply_seconds", &StepStats::apply_seconds)
      .def_readonly("uplink_wire_bytes", &StepStats::uplink_wire_bytes)
      .def_readonly("uplink_dense_bytes", &StepStats::uplink_dense_bytes)
      .def_readonly("downlink_wire_bytes", &StepStats::downlink_wire_bytes)
      .def_readonly("downlink_dense_bytes", &StepStats::downlink_dense_bytes)
      .def("__repr__", [](const StepStats& s) {
        return absl::StrCat("StepStats(step=", s.step,
                            ", compress_seconds=", s.compress_seconds,
                            ", wait_seconds=", s.wait_seconds,
                            ", apply_seconds=", s.apply_seconds,
                            ", uplink_wire_bytes=", s.uplink_wire_bytes,
                            ", uplink_dense_bytes=", s.uplink_dense_bytes,
                            ", downlink_wire_bytes=", s.downlink_wire_bytes,
                            ", downlink_dense_bytes=", s.downlink_dense_bytes,
                            ")");
      });

  py::class_<PyDistributedOptimizer>(module, "DistributedOptimizer")
      .def(py::init<const NamedTensors&, PyClient&, const CompressionOptions&,
                    double, double, int64_t, double, bool>(),
           py::arg("named_parameters"), py::arg("client"),
           py::arg("compression"), py::arg("lr"), py::arg("weight_decay"),
           py::arg("first_step"), py::arg("merged_keep_factor") = 0.0,
           py::arg("accumulate_in_update_space") = false,
           // The C++ optimizer keeps the client's Client*.
           py::keep_alive<1, 3>())
      .def("step", &PyDistributedOptimizer::Step)
      .def_property_readonly("current_step", &PyDistributedOptimizer::step)
      .def_property_readonly("busy", &PyDistributedOptimizer::busy)
      .def_property("lr", &PyDistributedOptimizer::LearningRate,
                    &PyDistributedOptimizer::SetLearningRate)
      .def("layer_totals", &PyDistributedOptimizer::LayerTotals)
      .def("save_state", &PyDistributedOptimizer::SaveState, py::arg("path"))
      .def("load_state", &PyDistributedOptimizer::LoadState, py::arg("path"))
      .def("state_dict", &PyDistributedOptimizer::StateDict)
      .def("load_state_dict", &PyDistributedOptimizer::LoadStateDict,
           py::arg("state"));

  module.def("read_state_file", &ReadStateFile, py::arg("path"));
}

}  // namespace entrograd::python
