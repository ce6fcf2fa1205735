// GradientsOnlyOptimizer: the inner optimizer DistributedOptimizer is given
// when momentum correction is off and the optimizer that steps is a Python
// one (torch.optim.*). DistributedOptimizer::Step leaves each merged update
// in the parameter's .grad and calls the inner optimizer's step(); this
// one does nothing there, so that the Python optimizer steps afterwards, on
// the GIL-holding thread, with the merged gradients.
#ifndef ENTROGRAD_PYTHON_SRC_GRADIENTS_ONLY_OPTIMIZER_H_
#define ENTROGRAD_PYTHON_SRC_GRADIENTS_ONLY_OPTIMIZER_H_

#include <torch/torch.h>

#include <vector>

namespace entrograd::python {

class GradientsOnlyOptimizer : public torch::optim::Optimizer {
 public:
  explicit GradientsOnlyOptimizer(std::vector<torch::Tensor> parameters)
      : torch::optim::Optimizer(
            {torch::optim::OptimizerParamGroup(std::move(parameters))},
            std::make_unique<torch::optim::SGDOptions>(/*lr=*/1.0)) {}

  // Leaves the merged gradients in .grad; returns an undefined tensor.
  torch::Tensor step(LossClosure /*closure*/ = nullptr) override { return {}; }
};

}  // namespace entrograd::python

#endif  // ENTROGRAD_PYTHON_SRC_GRADIENTS_ONLY_OPTIMIZER_H_
