#include "transport/client_impl.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "entrograd/common/status_macros.h"
#include "entrograd/codec.h"
#include "transport/channel_factory.h"
#include "transport/client_options_check.h"
#include "transport/layer_partition.h"
#include "transport/partitioned_client.h"
#include "entrograd/wire/payload_proto.h"

namespace entrograd {

namespace {

// How long Close waits for the shards to end the streams after the
// half-close before it cancels them.
constexpr absl::Duration kCloseGrace = absl::Seconds(1);

v1::Join MakeJoin(const ClientOptions& options,
                  const std::vector<LayerSpecification>& layers,
                  uint64_t initial_params_hash) {
  v1::Join join;
  join.set_job_id(options.job_id);
  join.set_rank(options.rank);
  join.set_world_size(options.world_size);
  join.set_incarnation(options.incarnation);
  for (const LayerSpecification& layer : layers) {
    v1::LayerInfo* info = join.add_layers();
    info->set_name(layer.name);
    info->set_numel(layer.numel);
  }
  join.set_initial_params_hash(initial_params_hash);
  join.set_applied_step(options.applied_step);
  // The decoder reads every value type.
  join.add_accepted_value_types(v1::VALUE_TYPE_F32);
  join.add_accepted_value_types(v1::VALUE_TYPE_F16);
  join.add_accepted_value_types(v1::VALUE_TYPE_BF16);
  join.add_accepted_value_types(v1::VALUE_TYPE_E5M2);
  if (options.gap_range_indices) {
    join.add_accepted_index_encodings(v1::INDEX_ENCODING_GAP_RANGE);
  }
  return join;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    ClientOptions options, std::vector<LayerSpecification> layers,
    uint64_t initial_params_hash, absl::Duration join_timeout) {
  // Checked here, before the layers are cut; ClientImpl::Connect checks
  // again (cheap, once per process).
  ENTROGRAD_RETURN_IF_ERROR(ValidateClientOptions(options));
  if (options.partition_bytes == 0) {
    return ClientImpl::Connect(std::move(options), std::move(layers),
                               initial_params_hash, join_timeout);
  }
  ENTROGRAD_RETURN_IF_ERROR(ValidateLayerTable(layers));
  ENTROGRAD_ASSIGN_OR_RETURN(
      LayerPartition partition,
      LayerPartition::Create(layers, static_cast<uint64_t>(
                                         options.partition_bytes) /
                                         sizeof(float)));
  if (!partition.cuts_any_layer()) {
    return ClientImpl::Connect(std::move(options), std::move(layers),
                               initial_params_hash, join_timeout);
  }
  ENTROGRAD_ASSIGN_OR_RETURN(
      std::unique_ptr<Client> inner,
      ClientImpl::Connect(std::move(options), partition.wire_layers(),
                          initial_params_hash, join_timeout));
  return std::unique_ptr<Client>(
      new PartitionedClient(std::move(inner), std::move(partition)));
}

absl::StatusOr<std::unique_ptr<Client>> ClientImpl::Connect(
    ClientOptions options, std::vector<LayerSpecification> layers,
    uint64_t initial_params_hash, absl::Duration join_timeout) {
  ENTROGRAD_RETURN_IF_ERROR(ValidateClientOptions(options));
  ENTROGRAD_RETURN_IF_ERROR(ValidateLayerTable(layers));
  if (join_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("join_timeout = ", absl::FormatDuration(join_timeout),
                     " must be positive"));
  }
  ENTROGRAD_ASSIGN_OR_RETURN(ShardMap shard_map,
                             ShardMap::Create(options.shards));
  std::unique_ptr<ClientImpl> client(new ClientImpl(
      std::move(options), std::move(shard_map), std::move(layers)));
  const ClientOptions& opts = client->options_;
  client->state_->join = MakeJoin(opts, client->layers_, initial_params_hash);

  std::random_device entropy;
  for (int shard = 0; shard < client->shard_map_.size(); ++shard) {
    ShardStreamOptions stream_options;
    stream_options.shard = shard;
    stream_options.address = client->shard_map_.address(shard);
    stream_options.token = opts.token;
    for (int owner : client->shard_of_layer_) {
      stream_options.owned_layers.push_back(owner == shard);
    }
    stream_options.backoff = {opts.reconnect_initial_backoff,
                              opts.reconnect_max_backoff,
                              opts.reconnect_jitter};
    stream_options.give_up_after = opts.reconnect_give_up_after;
    stream_options.join_timeout = join_timeout;
    stream_options.seed = (static_cast<uint64_t>(entropy()) << 32) ^ entropy();
    client->streams_.push_back(std::make_unique<ShardStream>(
        std::move(stream_options),
        MakeShardChannel(client->shard_map_.address(shard), opts),
        client->state_.get()));
  }
  // Join every shard at once; report the first refusal in shard order.
  const absl::Time deadline = absl::Now() + join_timeout;
  for (auto& stream : client->streams_) stream->Start(deadline);
  for (auto& stream : client->streams_) {
    absl::Status status = stream->AwaitJoined();
    if (!status.ok()) {
      client->Close();
      return status;
    }
  }
  return std::unique_ptr<Client>(std::move(client));
}

ClientImpl::ClientImpl(ClientOptions options, ShardMap shard_map,
                       std::vector<LayerSpecification> layers)
    : options_(std::move(options)),
      shard_map_(std::move(shard_map)),
      layers_(std::move(layers)),
      state_(std::make_unique<ClientState>(options_.applied_step)) {
  for (uint32_t layer = 0; layer < layers_.size(); ++layer) {
    shard_of_layer_.push_back(shard_map_.ShardOf(options_.job_id, layer));
    state_->layer_numels.push_back(layers_[layer].numel);
  }
}

ClientImpl::~ClientImpl() { Close(); }

absl::Status ClientImpl::CheckContribution(
    const LayerContribution& contribution) const {
  if (contribution.layer >= layers_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer ", contribution.layer, " is unknown; the layer table has ",
        layers_.size(), " layers"));
  }
  const LayerSpecification& spec = layers_[contribution.layer];
  if (contribution.numel != spec.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("contribution.numel ", contribution.numel,
                     " does not match layer ", contribution.layer, " (\"",
                     spec.name, "\") of ", spec.numel, " elements"));
  }
  if (contribution.step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("contribution.step ", contribution.step, " is negative"));
  }
  if (contribution.dense) {
    if (!contribution.indices.empty() ||
        contribution.values.size() != contribution.numel) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a dense contribution needs no indices and numel (",
          contribution.numel, ") values; got ", contribution.indices.size(),
          " indices and ", contribution.values.size(), " values"));
    }
  } else if (contribution.indices.size() != contribution.values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("contribution has ", contribution.indices.size(),
                     " indices but ", contribution.values.size(), " values"));
  }
  // The shard's rule (ValidateMergedKeepFactor), checked here so that the
  // error names the caller's contribution instead of failing the round.
  if (!IsValidMergedKeepFactor(contribution.merged_keep_factor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "contribution.merged_keep_factor ", contribution.merged_keep_factor,
        " is neither 0 (the whole union) nor in [1, 1e6]"));
  }
  const int64_t applied = state_->inbox.applied_step();
  if (contribution.step <= applied) {
    return absl::FailedPreconditionError(
        absl::StrCat("step ", contribution.step,
                     " is already applied (applied step ", applied, ")"));
  }
  return absl::OkStatus();
}

absl::Status ClientImpl::SendLayer(LayerContribution contribution) {
  if (absl::Status fatal = state_->inbox.fatal(); !fatal.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the client can no longer send: ", fatal.ToString()));
  }
  ENTROGRAD_RETURN_IF_ERROR(CheckContribution(contribution));
  EncodeOptions encode_options;
  encode_options.value_type = options_.value_type;
  encode_options.consider_gap_range = options_.gap_range_indices;
  absl::StatusOr<EncodedPayload> payload =
      contribution.dense
          ? EncodeDense(contribution.values, encode_options)
          : EncodeSparse(contribution.numel, contribution.indices,
                         contribution.values, encode_options);
  if (!payload.ok()) {
    return absl::Status(
        payload.status().code(),
        absl::StrCat("step ", contribution.step, ", layer ", contribution.layer,
                     ": ", payload.status().message()));
  }
  auto message = std::make_shared<v1::WorkerMessage>();
  v1::LayerUpdate* update = message->mutable_layer_update();
  update->set_step(contribution.step);
  update->set_layer_index(contribution.layer);
  PayloadToProto(*payload, update->mutable_payload());
  update->set_entropy(contribution.entropy);
  update->set_keep_ratio(contribution.keep_ratio);
  update->set_merged_keep_factor(contribution.merged_keep_factor);
  update->set_applied_step(state_->inbox.applied_step());
  const int64_t message_bytes = static_cast<int64_t>(message->ByteSizeLong());
  if (message_bytes > options_.max_message_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "step ", contribution.step, ", layer ", contribution.layer,
        ": the update is ", message_bytes,
        " bytes, more than max_message_bytes = ", options_.max_message_bytes));
  }
  ENTROGRAD_RETURN_IF_ERROR(streams_[shard_of_layer_[contribution.layer]]->Send(
      contribution.step, contribution.layer, std::move(message)));
  state_->traffic.saturated_values.fetch_add(payload->saturated_values);
  return absl::OkStatus();
}

absl::StatusOr<MergedLayerUpdate> ClientImpl::WaitMerged(int64_t step,
                                                         uint32_t layer) {
  if (layer >= layers_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer ", layer, " is unknown; the layer table has ",
                     layers_.size(), " layers"));
  }
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("step ", step, " is negative"));
  }
  return state_->inbox.Wait(step, layer, absl::Now() + options_.merge_timeout);
}

void ClientImpl::MarkApplied(int64_t step) { state_->inbox.MarkApplied(step); }

ClientTraffic ClientImpl::traffic() const { return state_->traffic.Snapshot(); }

void ClientImpl::Close() {
  {
    absl::MutexLock lock(&close_mutex_);
    if (closed_) return;
    closed_ = true;
  }
  state_->inbox.Fail(absl::CancelledError("the client was closed"));
  const absl::Time graceful_deadline = absl::Now() + kCloseGrace;
  for (auto& stream : streams_) stream->BeginClose(graceful_deadline);
  for (auto& stream : streams_) stream->FinishClose();
}

}  // namespace entrograd
