// Validation of what Client::Connect is given, before anything connects.
#ifndef ENTROGRAD_TRANSPORT_CLIENT_OPTIONS_CHECK_H_
#define ENTROGRAD_TRANSPORT_CLIENT_OPTIONS_CHECK_H_

#include <vector>

#include "absl/status/status.h"
#include "entrograd/client.h"

namespace entrograd {

// OK, or INVALID_ARGUMENT naming the first bad field ("options.rank", ...)
// and its value.
absl::Status ValidateClientOptions(const ClientOptions& options);

// OK, or INVALID_ARGUMENT: an empty table, or a layer with numel 0 or
// beyond kMaxPayloadNumel (naming it).
absl::Status ValidateLayerTable(const std::vector<LayerSpecification>& layers);

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_CLIENT_OPTIONS_CHECK_H_
