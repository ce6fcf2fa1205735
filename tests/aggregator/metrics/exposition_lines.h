// Helpers to read Prometheus text exposition in tests: the lines of a text,
// and the serialization of a registry without HTTP.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_METRICS_EXPOSITION_LINES_H_
#define ENTROGRAD_TESTS_AGGREGATOR_METRICS_EXPOSITION_LINES_H_

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace entrograd::aggregator::testing {

// The non-empty lines of `text`.
inline std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// What GET /metrics would return for `registry`.
inline std::string Serialize(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace entrograd::aggregator::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_METRICS_EXPOSITION_LINES_H_
