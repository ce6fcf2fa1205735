#include "workers/fashion_mnist/training_job.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "entrograd/client.h"
#include "entrograd/client_metrics.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "entrograd/torch/retain_freed_memory.h"
#include "workers/fashion_mnist/checkpoint.h"
#include "workers/fashion_mnist/cnn_model.h"
#include "workers/fashion_mnist/evaluate.h"
#include "workers/fashion_mnist/fashion_mnist.h"
#include "workers/fashion_mnist/shard_sampler.h"
#include "workers/run_format/lr_schedule.h"
#include "workers/run_format/worker_event.h"

namespace entrograd::workers {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<torch::Tensor> Tensors(
    const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  std::vector<torch::Tensor> tensors;
  for (const auto& [name, tensor] : named) tensors.push_back(tensor);
  return tensors;
}

std::vector<std::pair<std::string, torch::Tensor>> NamedParameters(
    FashionCnn& model) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : model->named_parameters()) {
    named.emplace_back(item.key(), item.value());
  }
  return named;
}

run_format::WireBytes WireBytesOf(const ClientTraffic& traffic) {
  run_format::WireBytes bytes;
  bytes.uplink = traffic.uplink_wire_bytes;
  bytes.downlink = traffic.downlink_wire_bytes;
  bytes.dense_equivalent =
      traffic.uplink_dense_bytes + traffic.downlink_dense_bytes;
  return bytes;
}

std::string ParamsHash(const std::vector<torch::Tensor>& parameters) {
  return absl::StrFormat("%016x", HashOfParameters(parameters));
}

// The PEM text of `path` into `*pem`; "" leaves it empty. INVALID_ARGUMENT
// naming `flag` when the file cannot be read or is empty: an empty CA would
// turn the client's TLS silently off.
absl::Status ReadPem(absl::string_view flag, const std::string& path,
                     std::string* pem) {
  if (path.empty()) return absl::OkStatus();
  std::ifstream file(path);
  std::stringstream text;
  if (!file || !(text << file.rdbuf())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", path, ": cannot be read or is empty"));
  }
  *pem = text.str();
  return absl::OkStatus();
}

// ClientOptions takes PEM contents; the config names files.
absl::Status ReadTlsFiles(const WorkerConfig& config, ClientOptions* options) {
  if (absl::Status s =
          ReadPem("tls_ca", config.tls_ca_file, &options->tls_root_certs);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadPem("tls_cert", config.tls_cert_file, &options->tls_client_cert);
      !s.ok()) {
    return s;
  }
  return ReadPem("tls_key", config.tls_key_file, &options->tls_client_key);
}

}  // namespace

absl::Status RunTrainingJob(const WorkerConfig& config) try {
  if (absl::Status status = ValidateWorkerConfig(config); !status.ok()) {
    return status;
  }
  const auto job_start = Clock::now();
  // One intra-op thread: W workers share the machine's cores, and a fixed
  // thread count keeps every reduction's order, so every run, the same.
  torch::set_num_threads(config.threads);
  if (config.retain_freed_memory) {
    // Before the first tensor: every step then reuses the last one's pages.
    if (absl::Status s = RetainFreedMemory(); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("--retain_freed_memory: ",
                                                 s.message()));
    }
  }
  absl::StatusOr<FashionMnist> data = LoadFashionMnist(config.data_dir);
  if (!data.ok()) return data.status();
  // The validation set is the training set's tail, never trained on.
  MnistSplit validation;
  if (config.validation > 0) {
    const int64_t kept = data->train.images.size(0) - config.validation;
    validation = {data->train.images.narrow(0, kept, config.validation),
                  data->train.labels.narrow(0, kept, config.validation)};
    data->train = {data->train.images.narrow(0, 0, kept),
                   data->train.labels.narrow(0, 0, kept)};
  }
  absl::StatusOr<ShardSampler> sampler =
      ShardSampler::Create(data->train.images.size(0), config.world_size,
                           config.batch_size, config.seed);
  if (!sampler.ok()) return sampler.status();

  // Every rank builds the same initial model from the seed; its hash goes in
  // the Join so that replicas that start apart are refused.
  absl::StatusOr<FashionCnn> made = MakeFashionCnn(config.seed, config.model);
  if (!made.ok()) return made.status();
  FashionCnn model = *made;
  auto named = NamedParameters(model);
  const uint64_t initial_hash = HashOfParameters(Tensors(named));

  std::filesystem::create_directories(config.out_dir);
  const int64_t resumed_step =
      config.resume ? CheckpointStep(config.out_dir) : -1;

  ClientOptions client_options;
  client_options.shards = config.shards;
  client_options.job_id = config.job_id;
  client_options.rank = config.rank;
  client_options.world_size = config.world_size;
  client_options.incarnation = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  // The checkpoint stores the next step; every step before it was applied.
  client_options.applied_step = resumed_step >= 0 ? resumed_step - 1 : -1;
  client_options.token = config.token;
  if (absl::Status s = ReadTlsFiles(config, &client_options); !s.ok()) {
    return s;
  }
  client_options.merge_timeout = config.merge_timeout;
  client_options.partition_bytes = config.partition_bytes;
  client_options.value_type = config.value_type;
  client_options.gap_range_indices = config.gap_range_indices;
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(client_options, LayerTableOf(named), initial_hash);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("connecting to the aggregator: ",
                                     client.status().message()));
  }

  // With momentum, every policy uses momentum correction (ALGORITHM.md 5.1):
  // plain SGD on the merged update of compressed layers, and momentum SGD
  // for the layers sent whole (step 7). Under `dense` every layer is sent
  // whole, so the baseline is exactly synchronous momentum SGD on the
  // averaged gradient, as DDP runs it, with no special case.
  DistributedOptimizerOptions options;
  options.compression.policy = config.policy;
  options.compression.rho = config.rho;
  options.compression.budget_density = config.rho;
  options.compression.threshold = config.threshold;
  options.compression.min_keep_ratio = config.min_keep_ratio;
  options.compression.entropy_of = config.entropy_of;
  options.compression.share_hold_steps = config.share_hold_steps;
  options.compression.intervals = config.intervals;
  options.compression.dense_below = config.dense_below;
  options.compression.warmup_steps = config.warmup_steps;
  options.compression.momentum_correction = config.momentum > 0;
  options.compression.momentum = config.momentum;
  options.learning_rate = config.learning_rate;
  options.merged_keep_factor = config.merged_keep_factor;
  options.accumulate_in_update_space = config.accumulate_in_update_space;
  std::unique_ptr<torch::optim::SGD> inner;
  if (!options.compression.momentum_correction) {
    inner = std::make_unique<torch::optim::SGD>(
        Tensors(named), torch::optim::SGDOptions(config.learning_rate)
                            .momentum(config.momentum));
    options.inner_optimizer = inner.get();
  }
  std::unique_ptr<ClientMetrics> metrics;
  if (!config.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<ClientMetrics>> started =
        ClientMetrics::Start({config.metrics_listen, config.job_id, config.rank,
                              config.per_layer_metrics});
    if (!started.ok()) {
      return absl::Status(
          started.status().code(),
          absl::StrCat("--metrics_listen: ", started.status().message()));
    }
    metrics = std::move(*started);
    options.metrics = metrics.get();
  }
  absl::StatusOr<std::unique_ptr<DistributedOptimizer>> optimizer =
      DistributedOptimizer::Create(named, options, client->get());
  if (!optimizer.ok()) return optimizer.status();
  if (resumed_step >= 0) {
    absl::StatusOr<bool> loaded =
        LoadCheckpoint(config.out_dir, model, **optimizer, inner.get());
    if (!loaded.ok()) return loaded.status();
  }

  const int64_t steps_per_epoch = sampler->steps_per_epoch();
  int64_t total_steps = steps_per_epoch * config.epochs;
  if (config.max_steps > 0 && config.max_steps < total_steps) {
    total_steps = config.max_steps;
  }
  int64_t parameter_count = 0;
  for (const auto& [name, tensor] : named) parameter_count += tensor.numel();
  run_format::StartEvent start;
  start.rank = static_cast<int>(config.rank);
  start.world_size = static_cast<int>(config.world_size);
  start.steps_per_epoch = steps_per_epoch;
  start.total_steps = total_steps;
  start.first_step = (*optimizer)->step();
  start.parameters = parameter_count;
  start.layers = static_cast<int64_t>(named.size());
  start.policy = std::string(KeepPolicyName(config.policy));
  start.model = std::string(ModelKindName(config.model));
  start.metrics_port = metrics ? metrics->port() : 0;
  run_format::EmitWorkerEvent(start);

  EvalResult last_eval;
  EvalResult last_validation;
  bool evaluated = false;
  // Wall-clock time of the training loop, and the part of it rank 0 spent
  // evaluating (every rank waits for it at the next merge): time-to-accuracy
  // is measured on the training time alone, as bench/ddp_fashion_mnist.py
  // measures DDP's.
  const auto loop_start = Clock::now();
  double eval_seconds = 0;
  auto evaluate = [&]() -> absl::Status {
    const auto eval_start = Clock::now();
    const int64_t test_size = data->test.images.size(0);
    const int64_t samples = config.eval_samples > 0
                                ? std::min(config.eval_samples, test_size)
                                : test_size;
    absl::StatusOr<EvalResult> result =
        Evaluate(model, data->test.images.narrow(0, 0, samples),
                 data->test.labels.narrow(0, 0, samples));
    if (!result.ok()) return result.status();
    last_eval = *result;
    if (config.validation > 0) {
      absl::StatusOr<EvalResult> held_out =
          Evaluate(model, validation.images, validation.labels);
      if (!held_out.ok()) return held_out.status();
      last_validation = *held_out;
    }
    evaluated = true;
    eval_seconds += Seconds(eval_start);
    return absl::OkStatus();
  };
  auto emit_eval = [&](int64_t step) {
    const double wall = Seconds(loop_start);
    run_format::EvalEvent eval;
    eval.rank = static_cast<int>(config.rank);
    eval.step = step;
    eval.seconds = wall;
    eval.train_seconds = wall - eval_seconds;
    eval.test_accuracy = last_eval.accuracy;
    eval.test_loss = last_eval.mean_loss;
    if (config.validation > 0) {
      eval.validation_accuracy = last_validation.accuracy;
      eval.validation_loss = last_validation.mean_loss;
    }
    run_format::EmitWorkerEvent(eval);
  };

  model->train();
  while ((*optimizer)->step() < total_steps) {
    const int64_t step = (*optimizer)->step();
    const int64_t epoch = step / steps_per_epoch;
    if (config.lr_schedule != LrSchedule::kConstant) {
      const double rate = LearningRateAt(config.lr_schedule,
                                         config.learning_rate, step, total_steps);
      if (inner != nullptr) {
        // Without momentum correction the torch optimizer applies the
        // merged gradient.
        for (auto& group : inner->param_groups()) {
          static_cast<torch::optim::SGDOptions&>(group.options()).lr(rate);
        }
      } else if (absl::Status status = (*optimizer)->set_learning_rate(rate);
                 !status.ok()) {
        return status;
      }
    }
    const auto step_start = Clock::now();
    absl::StatusOr<std::vector<int64_t>> batch = sampler->Batch(
        epoch, step % steps_per_epoch, static_cast<int>(config.rank));
    if (!batch.ok()) return batch.status();
    torch::Tensor index = torch::tensor(*batch, torch::kInt64);
    torch::Tensor images = data->train.images.index_select(0, index);
    torch::Tensor labels = data->train.labels.index_select(0, index);
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(images), labels);
    loss.backward();  // the hooks compress and send each layer
    const double backward_done = Seconds(step_start);
    absl::Status status = (*optimizer)->Step();
    if (!status.ok()) return status;
    const StepTiming& timing = (*optimizer)->last_timing();
    // The hooks compress inside backward(): that time is compress's, not
    // forward/backward's (under entropy_budget it is spent in Step()).
    const double forward_backward = std::max(
        0.0, backward_done - (config.policy == KeepPolicy::kEntropyBudget
                                  ? 0.0
                                  : timing.compress_seconds));
    const ClientTraffic traffic = (*client)->traffic();
    run_format::StepEvent step_event;
    step_event.rank = static_cast<int>(config.rank);
    step_event.epoch = epoch;
    step_event.step = step;
    step_event.loss = loss.item<double>();
    step_event.forward_backward_seconds = forward_backward;
    step_event.compress_seconds = timing.compress_seconds;
    step_event.wait_seconds = timing.wait_seconds;
    step_event.apply_seconds = timing.apply_seconds;
    step_event.step_seconds = Seconds(step_start);
    // Replicas must stay bitwise identical: every rank reports the hash of
    // its parameters after every step, for the launcher and tests.
    step_event.params_hash = ParamsHash(Tensors(named));
    step_event.bytes = WireBytesOf(traffic);
    step_event.reconnects = traffic.reconnects;
    run_format::EmitWorkerEvent(step_event);

    const int64_t done = (*optimizer)->step();
    if (config.checkpoint_interval > 0 &&
        done % config.checkpoint_interval == 0) {
      status = SaveCheckpoint(config.out_dir, model, **optimizer, inner.get());
      if (!status.ok()) return status;
    }
    const bool epoch_end = done % steps_per_epoch == 0 || done == total_steps;
    const bool periodic =
        config.eval_every > 0 && done % config.eval_every == 0;
    const bool last = done == total_steps;
    const bool evaluate_now =
        (epoch_end && (config.eval_each_epoch || last)) || periodic;
    if (evaluate_now && config.rank == 0) {
      status = evaluate();
      if (!status.ok()) return status;
      emit_eval(done);
    }
    if (epoch_end && config.rank == 0) {
      run_format::EpochEvent epoch_event;
      epoch_event.rank = static_cast<int>(config.rank);
      epoch_event.epoch = (done - 1) / steps_per_epoch;
      epoch_event.step = done;
      // Without an evaluation at this step the accuracy stays absent
      // rather than repeating an older one.
      if (evaluate_now) {
        epoch_event.test_accuracy = last_eval.accuracy;
        epoch_event.test_loss = last_eval.mean_loss;
      }
      run_format::EmitWorkerEvent(epoch_event);
    }
  }
  if (config.rank == 0 && !evaluated) {
    if (absl::Status status = evaluate(); !status.ok()) return status;
  }
  (*client)->Close();
  const ClientTraffic traffic = (*client)->traffic();
  run_format::DoneEvent done;
  done.rank = static_cast<int>(config.rank);
  done.steps = (*optimizer)->step();
  // Only rank 0 evaluates; the others leave the accuracy absent (null).
  if (evaluated) {
    done.test_accuracy = last_eval.accuracy;
    done.test_loss = last_eval.mean_loss;
  }
  done.params_hash = ParamsHash(Tensors(named));
  done.seconds = Seconds(job_start);
  done.train_seconds = Seconds(loop_start) - eval_seconds;
  done.bytes = WireBytesOf(traffic);
  done.reconnects = traffic.reconnects;
  for (const LayerTotals& totals : (*optimizer)->layer_totals()) {
    done.layer_shares.push_back({totals.name, totals.numel,
                                 totals.sent_share(), totals.merged_share()});
  }
  run_format::EmitWorkerEvent(done);
  return absl::OkStatus();
} catch (const c10::Error& error) {
  return absl::InternalError(
      absl::StrCat("LibTorch: ", error.what_without_backtrace()));
} catch (const std::exception& error) {
  return absl::InternalError(error.what());
}

}  // namespace entrograd::workers
