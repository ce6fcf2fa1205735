#include "entrograd_cli/inspect_report.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "entrograd/codec.h"
#include "entrograd/compression_options.h"
#include "entrograd_cli/inspect_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "support/status_matchers.h"

namespace entrograd::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

// The members' names of a JSON object, in order.
std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

std::vector<LayerInspection> TwoLayers() {
  LayerInspection a;
  a.name = "conv1.weight.npy";
  a.numel = 4096;
  a.entropy.intervals = 256;
  a.entropy.entropy = std::log(256.0);
  a.entropy.normalized_entropy = 1.0;
  a.entropy.effective_fraction = 0.99999999999999978;
  a.keep_ratio = 0.01;
  a.k = 41;
  a.encoded_bytes = {328, 205, 676, 16384};
  a.auto_encoding = IndexEncoding::kDeltaVarint;
  LayerInspection b;
  b.name = "bias \"odd\"\\name\n.f32";
  b.numel = 10;
  b.entropy.intervals = 10;
  b.entropy.entropy = 0.1 + 0.2;  // 0.30000000000000004: needs 17 digits
  b.entropy.normalized_entropy = 0.13028834457098853;
  b.entropy.effective_fraction = 0.13498588075760032;
  b.keep_ratio = 1.0;
  b.k = 10;
  b.dense = true;
  b.encoded_bytes = {80, 50, 42, 40};
  b.auto_encoding = IndexEncoding::kDense;
  return {a, b};
}

TEST(FormatInspectJsonTest, IsOneObjectWithTheDocumentedFields) {
  const std::vector<LayerInspection> layers = TwoLayers();
  const std::string json = FormatInspectJson(layers);
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(root.is_object()) << json;
  EXPECT_THAT(Keys(root), ElementsAre("layers"));
  const Json& array = root["layers"];
  ASSERT_TRUE(array.is_array());
  ASSERT_EQ(array.size(), 2u);
  for (size_t l = 0; l < layers.size(); ++l) {
    SCOPED_TRACE(l);
    const Json& layer = array[l];
    EXPECT_THAT(Keys(layer),
                ElementsAre("name", "numel", "entropy", "normalized_entropy",
                            "effective_fraction", "keep_ratio", "k",
                            "encoded_bytes", "auto_encoding"));
    EXPECT_TRUE(layer["numel"].is_number_integer());
    EXPECT_EQ(layer["numel"].get<int64_t>(), layers[l].numel);
    EXPECT_EQ(layer["k"].get<int64_t>(), layers[l].k);
    // Doubles round-trip exactly.
    EXPECT_EQ(layer["entropy"].get<double>(), layers[l].entropy.entropy);
    EXPECT_EQ(layer["normalized_entropy"].get<double>(),
              layers[l].entropy.normalized_entropy);
    EXPECT_EQ(layer["effective_fraction"].get<double>(),
              layers[l].entropy.effective_fraction);
    EXPECT_EQ(layer["keep_ratio"].get<double>(), layers[l].keep_ratio);
    const Json& bytes = layer["encoded_bytes"];
    EXPECT_THAT(Keys(bytes),
                ElementsAre("raw_u32", "delta_varint", "bitmap", "dense",
                            "gap_range"));
    for (size_t e = 0; e < kIndexEncodingCount; ++e) {
      EXPECT_EQ(bytes[std::string(IndexEncodingName(kAllIndexEncodings[e]))]
                    .get<int64_t>(),
                layers[l].encoded_bytes[e]);
    }
    EXPECT_EQ(layer["auto_encoding"].get<std::string>(),
              IndexEncodingName(layers[l].auto_encoding));
  }
  EXPECT_EQ(array[0]["name"], "conv1.weight.npy");
  EXPECT_EQ(array[1]["name"], "bias \"odd\"\\name\n.f32");
  EXPECT_THAT(json, HasSubstr("\"entropy\": 0.30000000000000004"));
  EXPECT_EQ(json.back(), '\n');
}

TEST(FormatInspectJsonTest, NoLayersIsAnEmptyArray) {
  EXPECT_EQ(FormatInspectJson({}), "{\n  \"layers\": []\n}\n");
}

TEST(FormatInspectJsonTest, NamesThatAreNotUtf8StillMakeValidJson) {
  std::vector<LayerInspection> layers = TwoLayers();
  layers[0].name =
      "gr\xc3\xa4"
      "dient_\xff.npy";  // valid UTF-8, then one stray byte
  const std::string json = FormatInspectJson(layers);
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(root.is_object()) << json;
  EXPECT_EQ(root["layers"][0]["name"],
            "gr\xc3\xa4"
            "dient_\xef\xbf\xbd.npy");  // U+FFFD in place of 0xff
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

TEST(FormatInspectTableTest, OneAlignedRowPerLayer) {
  std::vector<LayerInspection> layers = TwoLayers();
  layers[1].name = "bias.f32";
  CompressionOptions options;
  options.dense_below = 0;
  const std::string table = FormatInspectTable(layers, options);
  const std::vector<std::string> lines = Lines(table);
  ASSERT_EQ(lines.size(), 5u) << table;
  EXPECT_EQ(lines[0],
            "policy entropy, rho 0.01, intervals 256, dense_below 0; bytes = "
            "index + float32 values on the wire");
  const std::string& header = lines[1];
  for (const char* column : {"name", "numel", "entropy", "norm_entropy",
                             "eff_fraction", "keep_ratio", "k", "raw_u32",
                             "delta_varint", "bitmap", "dense", "auto"}) {
    EXPECT_THAT(header, HasSubstr(column));
  }
  EXPECT_EQ(lines[2].rfind("conv1.weight.npy ", 0), 0u);
  EXPECT_EQ(lines[3].rfind("bias.f32 ", 0), 0u);
  // Right-aligned numbers end under the end of their header.
  const size_t raw_end = header.find("raw_u32") + std::string("raw_u32").size();
  EXPECT_EQ(lines[2].substr(raw_end - 3, 3), "328");
  EXPECT_EQ(lines[3].substr(raw_end - 2, 2), "80");
  const size_t entropy_end =
      header.find(" entropy") + std::string(" entropy").size();
  EXPECT_EQ(lines[2].substr(entropy_end - 6, 6), "5.5452");
  EXPECT_THAT(lines[2], HasSubstr(" 1.0000 "));
  EXPECT_THAT(lines[2], HasSubstr(" 0.01 "));
  EXPECT_THAT(lines[3], HasSubstr("10 (dense)"));
  EXPECT_THAT(lines[2], ::testing::EndsWith("delta_varint"));
  EXPECT_THAT(lines[3], ::testing::EndsWith("dense"));
  // The automatic choice: 205 + 40 bytes against 4106 * 4 dense.
  EXPECT_EQ(lines[4],
            "total: 2 layers, 4106 elements, 51 sent; 245 bytes with the "
            "automatic encoding vs 16424 bytes dense float32 (67.0x smaller)");
}

TEST(FormatInspectTableTest, NamesEachPolicysParameter) {
  CompressionOptions options;
  options.policy = KeepPolicy::kEntropyBudget;
  options.budget_density = 0.002;
  EXPECT_THAT(FormatInspectTable({}, options),
              HasSubstr("policy entropy_budget, budget density 0.002,"));
  options.policy = KeepPolicy::kThreshold;
  options.threshold = 0.25;
  EXPECT_THAT(FormatInspectTable({}, options),
              HasSubstr("policy threshold, threshold 0.25,"));
  options.policy = KeepPolicy::kDense;
  EXPECT_THAT(FormatInspectTable({}, options),
              HasSubstr("policy dense, intervals 256, dense_below 1024"));
}

}  // namespace
}  // namespace entrograd::cli
