// absl::Status <-> grpc::Status. The codes map 1:1 (both follow
// google.rpc.Code), so this is the one place the mapping is written.
#ifndef ENTROGRAD_WIRE_GRPC_STATUS_H_
#define ENTROGRAD_WIRE_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace entrograd {

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

}  // namespace entrograd

#endif  // ENTROGRAD_WIRE_GRPC_STATUS_H_
