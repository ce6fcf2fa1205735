#include "torch/momentum_sgd.h"

namespace entrograd {

void MomentumSgdStep(const torch::Tensor& merged, double momentum,
                     double learning_rate, torch::Tensor& velocity,
                     torch::Tensor& parameter) {
  torch::NoGradGuard no_grad;
  velocity.mul_(momentum).add_(merged);
  parameter.sub_((velocity * learning_rate).view(parameter.sizes()));
}

}  // namespace entrograd
