#include "entrograd_cli/npy_header.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "entrograd/common/status_macros.h"

namespace entrograd::cli {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";

uint64_t LittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i > 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i - 1]);
  }
  return value;
}

// A recursive-descent reader of the one Python literal NumPy writes. Every
// accessor checks the position against the end, so any input is safe.
class DictParser {
 public:
  explicit DictParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<NpyHeader> Parse() {
    NpyHeader header;
    bool seen_descr = false;
    bool seen_fortran_order = false;
    bool seen_shape = false;
    SkipSpace();
    ENTROGRAD_RETURN_IF_ERROR(Expect('{'));
    SkipSpace();
    while (!AtEnd() && Peek() != '}') {
      const size_t key_position = position_;
      ENTROGRAD_ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipSpace();
      ENTROGRAD_RETURN_IF_ERROR(Expect(':'));
      SkipSpace();
      if (key == "descr") {
        ENTROGRAD_RETURN_IF_ERROR(CheckFirst(seen_descr, key, key_position));
        if (!AtEnd() && Peek() == '[') {
          return Error(
              "descr is a structured dtype (a list of fields); "
              "expected a plain dtype string");
        }
        ENTROGRAD_ASSIGN_OR_RETURN(header.descr, ParseString());
      } else if (key == "fortran_order") {
        ENTROGRAD_RETURN_IF_ERROR(
            CheckFirst(seen_fortran_order, key, key_position));
        ENTROGRAD_ASSIGN_OR_RETURN(header.fortran_order, ParseBool());
      } else if (key == "shape") {
        ENTROGRAD_RETURN_IF_ERROR(CheckFirst(seen_shape, key, key_position));
        ENTROGRAD_ASSIGN_OR_RETURN(header.shape, ParseShape());
      } else {
        position_ = key_position;
        return Error(absl::StrCat("unknown key '", key,
                                  "'; expected descr, fortran_order, shape"));
      }
      SkipSpace();
      if (!AtEnd() && Peek() == ',') {
        ++position_;
        SkipSpace();
        continue;
      }
      break;
    }
    ENTROGRAD_RETURN_IF_ERROR(Expect('}'));
    // NumPy pads the dictionary with spaces up to a newline.
    SkipSpace();
    if (!AtEnd()) return Error("unexpected text after the dictionary");
    if (!seen_descr) return Error("missing key 'descr'");
    if (!seen_fortran_order) return Error("missing key 'fortran_order'");
    if (!seen_shape) return Error("missing key 'shape'");
    return header;
  }

 private:
  bool AtEnd() const { return position_ >= text_.size(); }
  char Peek() const { return text_[position_]; }

  void SkipSpace() {
    while (!AtEnd() &&
           (absl::ascii_isspace(static_cast<unsigned char>(Peek())) ||
            Peek() == '\0')) {
      ++position_;
    }
  }

  absl::Status Error(absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat("bad npy header: ", problem, " (at byte ", position_,
                     " of the header dictionary)"));
  }

  absl::Status Expect(char wanted) {
    if (AtEnd()) {
      return Error(absl::StrCat("expected '", std::string(1, wanted),
                                "', found the end of the header"));
    }
    if (Peek() != wanted) {
      return Error(absl::StrCat("expected '", std::string(1, wanted),
                                "', found ", Describe(Peek())));
    }
    ++position_;
    return absl::OkStatus();
  }

  static std::string Describe(char c) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f)
      return absl::StrCat("'", std::string(1, c), "'");
    return absl::StrCat("byte 0x", absl::Hex(byte, absl::kZeroPad2));
  }

  absl::Status CheckFirst(bool& seen, absl::string_view key,
                          size_t key_position) {
    if (seen) {
      position_ = key_position;
      return Error(absl::StrCat("key '", key, "' appears twice"));
    }
    seen = true;
    return absl::OkStatus();
  }

  // A quoted Python string without escapes (NumPy never writes any in the
  // keys or dtype strings we accept).
  absl::StatusOr<std::string> ParseString() {
    if (AtEnd() || (Peek() != '\'' && Peek() != '"')) {
      return Error(AtEnd() ? "expected a quoted string, found the end"
                           : absl::StrCat("expected a quoted string, found ",
                                          Describe(Peek())));
    }
    const char quote = Peek();
    const size_t start = ++position_;
    while (!AtEnd() && Peek() != quote) {
      if (Peek() == '\\') return Error("escapes in strings are not supported");
      ++position_;
    }
    if (AtEnd()) {
      position_ = start - 1;
      return Error("unterminated string");
    }
    std::string value(text_.substr(start, position_ - start));
    ++position_;
    return value;
  }

  absl::StatusOr<bool> ParseBool() {
    if (ConsumeWord("True")) return true;
    if (ConsumeWord("False")) return false;
    return Error("fortran_order must be True or False");
  }

  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(position_, word.size()) != word) return false;
    const size_t end = position_ + word.size();
    if (end < text_.size() &&
        (absl::ascii_isalnum(static_cast<unsigned char>(text_[end])) ||
         text_[end] == '_')) {
      return false;
    }
    position_ = end;
    return true;
  }

  // "()", "(5,)", "(3, 4)", "(3, 4,)"; Python 2 long literals ("3L") too.
  // A bare "(5)" is read as (5,) rather than refused: it is unambiguous.
  absl::StatusOr<std::vector<uint64_t>> ParseShape() {
    std::vector<uint64_t> shape;
    ENTROGRAD_RETURN_IF_ERROR(Expect('('));
    SkipSpace();
    while (!AtEnd() && Peek() != ')') {
      ENTROGRAD_ASSIGN_OR_RETURN(uint64_t dimension, ParseDimension());
      shape.push_back(dimension);
      SkipSpace();
      if (!AtEnd() && Peek() == ',') {
        ++position_;
        SkipSpace();
        continue;
      }
      break;
    }
    ENTROGRAD_RETURN_IF_ERROR(Expect(')'));
    return shape;
  }

  absl::StatusOr<uint64_t> ParseDimension() {
    if (AtEnd() || !absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      return Error(AtEnd() ? "expected a dimension, found the end"
                           : absl::StrCat("expected a non-negative integer "
                                          "dimension, found ",
                                          Describe(Peek())));
    }
    const size_t start = position_;
    uint64_t value = 0;
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    while (!AtEnd() &&
           absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      const uint64_t digit = static_cast<uint64_t>(Peek() - '0');
      if (value > (kMax - digit) / 10) {
        position_ = start;
        return Error("shape dimension does not fit in 64 bits");
      }
      value = value * 10 + digit;
      ++position_;
    }
    if (!AtEnd() && (Peek() == 'L' || Peek() == 'l')) ++position_;
    return value;
  }

  absl::string_view text_;
  size_t position_ = 0;
};

}  // namespace

absl::StatusOr<NpyPreamble> ParseNpyPreamble(absl::string_view first_bytes) {
  if (first_bytes.size() < kMagic.size() ||
      first_bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError(
        "not a .npy file: it does not start with the \\x93NUMPY magic");
  }
  if (first_bytes.size() < kMagic.size() + 2) {
    return absl::InvalidArgumentError(
        "bad npy header: the file ends inside the version bytes");
  }
  NpyPreamble preamble;
  preamble.major_version = static_cast<unsigned char>(first_bytes[6]);
  preamble.minor_version = static_cast<unsigned char>(first_bytes[7]);
  if (preamble.major_version < 1 || preamble.major_version > 3 ||
      preamble.minor_version != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported npy format version ", preamble.major_version, ".",
        preamble.minor_version, "; expected 1.0, 2.0 or 3.0"));
  }
  // Version 1.0 has a 2-byte header length; 2.0 and 3.0 (3.0 only changes
  // the header's text encoding to UTF-8) have 4 bytes.
  const size_t length_bytes = preamble.major_version == 1 ? 2 : 4;
  preamble.header_offset = kMagic.size() + 2 + length_bytes;
  if (first_bytes.size() < preamble.header_offset) {
    return absl::InvalidArgumentError(
        "bad npy header: the file ends inside the header length");
  }
  preamble.header_length =
      LittleEndian(first_bytes.substr(kMagic.size() + 2, length_bytes));
  if (preamble.header_length > kNpyMaxHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad npy header: header length ", preamble.header_length,
                     " exceeds the ", kNpyMaxHeaderBytes, " bytes accepted"));
  }
  return preamble;
}

absl::StatusOr<NpyHeader> ParseNpyHeaderDict(absl::string_view dict) {
  return DictParser(dict).Parse();
}

}  // namespace entrograd::cli
