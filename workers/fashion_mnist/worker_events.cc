#include "workers/fashion_mnist/worker_events.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "entrograd/common/json_quote.h"

namespace entrograd::workers {

EventLine::EventLine(absl::string_view event)
    : text_(absl::StrCat("{\"event\":", JsonQuote(event))) {}

EventLine& EventLine::Add(absl::string_view key, double value) {
  // JSON has no NaN/Inf: they become null.
  absl::StrAppend(
      &text_, ",", JsonQuote(key), ":",
      std::isfinite(value) ? absl::StrFormat("%.9g", value) : "null");
  return *this;
}

EventLine& EventLine::Add(absl::string_view key, int64_t value) {
  absl::StrAppend(&text_, ",", JsonQuote(key), ":", value);
  return *this;
}

EventLine& EventLine::Add(absl::string_view key, absl::string_view value) {
  absl::StrAppend(&text_, ",", JsonQuote(key), ":", JsonQuote(value));
  return *this;
}

std::string EventLine::ToString() const { return text_ + "}"; }

void EventLine::Emit(std::FILE* out) const {
  const std::string line = ToString() + "\n";
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

}  // namespace entrograd::workers
