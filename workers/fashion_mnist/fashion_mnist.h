// Loads Fashion-MNIST from its four IDX files into normalised tensors.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_FASHION_MNIST_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_FASHION_MNIST_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace entrograd::workers {

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr char kDefaultFashionMnistDir[] =
    "/usr/share/datasets/fashion-mnist";

// The file names inside the directory; LoadFashionMnist tries each name
// as-is and then with ".gz" appended, so unpacked copies work too.
inline constexpr char kTrainImagesFile[] = "train-images-idx3-ubyte";
inline constexpr char kTrainLabelsFile[] = "train-labels-idx1-ubyte";
inline constexpr char kTestImagesFile[] = "t10k-images-idx3-ubyte";
inline constexpr char kTestLabelsFile[] = "t10k-labels-idx1-ubyte";

inline constexpr int64_t kFashionMnistTrainSize = 60000;
inline constexpr int64_t kFashionMnistTestSize = 10000;
inline constexpr int64_t kFashionMnistImageSide = 28;
inline constexpr int64_t kFashionMnistClasses = 10;

// Mean and standard deviation of the training pixels scaled to [0, 1]; every
// image is normalised with these, so train and test see the same transform.
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

// One split: images float32 [N, 1, 28, 28], each pixel
// (x / 255 - kFashionMnistMean) / kFashionMnistStd; labels int64 [N] in
// [0, 9]. Both are contiguous CPU tensors that own their memory.
struct MnistSplit {
  torch::Tensor images;
  torch::Tensor labels;
};

struct FashionMnist {
  MnistSplit train;  // kFashionMnistTrainSize samples.
  MnistSplit test;   // kFashionMnistTestSize samples.
};

// Reads the four files from `dir`. The pixels and labels are converted with
// exactly-rounded float32 operations only, so every machine gets the same
// bits.
//
// Errors, each naming the file concerned:
//   NotFound         a file is missing (under both names).
//   InvalidArgument  a file is not an IDX file of the right kind (see
//                    ReadIdxFile), an image is not 28x28, the sample count
//                    is not 60000 (train) / 10000 (test), or a label lies
//                    outside [0, 9].
//   DataLoss         a file is truncated or corrupt.
//   Internal         LibTorch failed (c10::Error), e.g. out of memory.
// Thread-safe.
absl::StatusOr<FashionMnist> LoadFashionMnist(const std::string& dir);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_FASHION_MNIST_H_
