// LoadFashionMnist: reads the IDX files, checks their shapes against the
// published dataset sizes, then converts to normalised tensors.

#include "workers/fashion_mnist/fashion_mnist.h"

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "entrograd/common/status_macros.h"
#include "workers/fashion_mnist/idx_reader.h"

namespace entrograd::workers {
namespace {

// Debian ships the files gzipped; a hand-unpacked copy drops the suffix.
// Prefers the gzipped name and falls back to the plain one, so a missing
// file is reported under the name Debian uses.
std::string ResolvePath(const std::string& dir, const char* name) {
  const std::string base = (std::filesystem::path(dir) / name).string();
  const std::string gzipped = base + ".gz";
  std::error_code error;
  if (!std::filesystem::exists(gzipped, error) &&
      std::filesystem::exists(base, error)) {
    return base;
  }
  return gzipped;
}

absl::StatusOr<MnistSplit> LoadSplit(const std::string& dir,
                                     const char* images_name,
                                     const char* labels_name,
                                     int64_t expected_count) {
  const std::string images_path = ResolvePath(dir, images_name);
  const std::string labels_path = ResolvePath(dir, labels_name);
  ENTROGRAD_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path, 3));
  ENTROGRAD_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path, 1));

  if (images.dims[0] != expected_count ||
      images.dims[1] != kFashionMnistImageSide ||
      images.dims[2] != kFashionMnistImageSide) {
    return absl::InvalidArgumentError(absl::StrCat(
        images_path, ": shape [", absl::StrJoin(images.dims, ", "),
        "], expected [", expected_count, ", ", kFashionMnistImageSide, ", ",
        kFashionMnistImageSide, "]"));
  }
  if (labels.dims[0] != expected_count) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels_path, ": ", labels.dims[0], " labels, expected ",
                     expected_count));
  }
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= kFashionMnistClasses) {
      return absl::InvalidArgumentError(
          absl::StrCat(labels_path, ": label ", labels.data[i], " at index ", i,
                       " outside [0, ", kFashionMnistClasses - 1, "]"));
    }
  }

  // from_blob borrows the vectors; to() copies (the dtype changes), so the
  // returned tensors own their memory.
  MnistSplit split;
  split.images = torch::from_blob(images.data.data(),
                                  {expected_count, 1, kFashionMnistImageSide,
                                   kFashionMnistImageSide},
                                  torch::kUInt8)
                     .to(torch::kFloat32);
  split.images.div_(255.0f).sub_(kFashionMnistMean).div_(kFashionMnistStd);
  split.labels =
      torch::from_blob(labels.data.data(), {expected_count}, torch::kUInt8)
          .to(torch::kInt64);
  return split;
}

}  // namespace

absl::StatusOr<FashionMnist> LoadFashionMnist(const std::string& dir) {
  try {
    FashionMnist dataset;
    ENTROGRAD_ASSIGN_OR_RETURN(
        dataset.train, LoadSplit(dir, kTrainImagesFile, kTrainLabelsFile,
                                 kFashionMnistTrainSize));
    ENTROGRAD_ASSIGN_OR_RETURN(dataset.test,
                               LoadSplit(dir, kTestImagesFile, kTestLabelsFile,
                                         kFashionMnistTestSize));
    return dataset;
  } catch (const c10::Error& error) {
    return absl::InternalError(
        absl::StrCat("LoadFashionMnist(", dir,
                     "): LibTorch: ", error.what_without_backtrace()));
  }
}

}  // namespace entrograd::workers
