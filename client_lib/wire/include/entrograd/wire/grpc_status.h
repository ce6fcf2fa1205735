// absl::Status <-> grpc::Status. The codes map 1:1 (both follow
// google.rpc.Code), so this is the one place the mapping is written.
//
// A stream's machine-readable end reason (v1::StreamEndReason,
// aggregator.proto) travels with the status: in process as an absl::Status
// payload under kStreamEndReasonKey, on the wire as trailing metadata of the
// same name. The shard attaches it with WithStreamEndReason; the worker gets
// it back with StreamEndStatus and reads it with StreamEndReasonOf.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_WIRE_GRPC_STATUS_H_
#define ENTROGRAD_WIRE_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "entrograd/v1/aggregator.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace entrograd {

// The trailing-metadata key (and the status payload's type URL) of a
// stream's end reason; its value is the StreamEndReason value's name.
inline constexpr absl::string_view kStreamEndReasonKey =
    "entrograd-stream-end-reason";

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

// `status` (not OK) carrying `reason`; an OK status stays OK (it carries
// nothing).
inline absl::Status WithStreamEndReason(absl::Status status,
                                        v1::StreamEndReason reason) {
  if (!status.ok()) {
    status.SetPayload(kStreamEndReasonKey,
                      absl::Cord(v1::StreamEndReason_Name(reason)));
  }
  return status;
}

// The reason `status` carries; UNSPECIFIED when none, or when the name is
// not one this build knows (a newer shard's reason).
inline v1::StreamEndReason StreamEndReasonOf(const absl::Status& status) {
  // absl::optional: Debian's Abseil does not alias std::optional.
  const auto payload = status.GetPayload(kStreamEndReasonKey);
  v1::StreamEndReason reason = v1::STREAM_END_REASON_UNSPECIFIED;
  if (payload.has_value() &&
      v1::StreamEndReason_Parse(std::string(*payload), &reason)) {
    return reason;
  }
  return v1::STREAM_END_REASON_UNSPECIFIED;
}

// How a client stream ended: `status` from Finish, with the end reason the
// server sent in `context`'s trailing metadata (call after Finish).
inline absl::Status StreamEndStatus(const grpc::Status& status,
                                    const grpc::ClientContext& context) {
  absl::Status end = FromGrpcStatus(status);
  if (end.ok()) return end;
  const auto& trailing = context.GetServerTrailingMetadata();
  const auto it = trailing.find(grpc::string_ref(kStreamEndReasonKey.data(),
                                                 kStreamEndReasonKey.size()));
  if (it != trailing.end()) {
    end.SetPayload(kStreamEndReasonKey,
                   absl::Cord(absl::string_view(it->second.data(),
                                                it->second.size())));
  }
  return end;
}

}  // namespace entrograd

#endif  // ENTROGRAD_WIRE_GRPC_STATUS_H_
