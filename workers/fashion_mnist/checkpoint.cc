#include "workers/fashion_mnist/checkpoint.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace entrograd::workers {

namespace fs = std::filesystem;

absl::Status SaveCheckpoint(const std::string& dir, FashionCnn& model,
                            const DistributedOptimizer& optimizer,
                            torch::optim::Optimizer* inner) try {
  const fs::path final_dir = fs::path(dir) / "checkpoint";
  const fs::path temp_dir = fs::path(dir) / "checkpoint.tmp";
  fs::remove_all(temp_dir);
  fs::create_directories(temp_dir);
  torch::save(model, (temp_dir / "model.pt").string());
  if (inner != nullptr)
    torch::save(*inner, (temp_dir / "inner_optimizer.pt").string());
  absl::Status status =
      optimizer.SaveState((temp_dir / "optimizer.pt").string());
  if (!status.ok()) return status;
  {
    std::ofstream step_file(temp_dir / "step");
    step_file << optimizer.step() << "\n";
    if (!step_file) {
      return absl::InternalError(
          absl::StrCat("cannot write ", (temp_dir / "step").string()));
    }
  }
  // Replace the old checkpoint in two renames; a crash between them leaves
  // checkpoint.old, which LoadCheckpoint does not read (the step is then
  // lost, never half-written).
  const fs::path old_dir = fs::path(dir) / "checkpoint.old";
  fs::remove_all(old_dir);
  if (fs::exists(final_dir)) fs::rename(final_dir, old_dir);
  fs::rename(temp_dir, final_dir);
  fs::remove_all(old_dir);
  return absl::OkStatus();
} catch (const std::exception& error) {
  return absl::InternalError(
      absl::StrCat("checkpoint to ", dir, ": ", error.what()));
}

int64_t CheckpointStep(const std::string& dir) {
  std::ifstream step_file(fs::path(dir) / "checkpoint" / "step");
  int64_t step = -1;
  if (!(step_file >> step)) return -1;
  return step;
}

absl::StatusOr<bool> LoadCheckpoint(const std::string& dir, FashionCnn& model,
                                    DistributedOptimizer& optimizer,
                                    torch::optim::Optimizer* inner) try {
  const fs::path final_dir = fs::path(dir) / "checkpoint";
  if (!fs::exists(final_dir / "step")) return false;
  torch::load(model, (final_dir / "model.pt").string());
  if (inner != nullptr)
    torch::load(*inner, (final_dir / "inner_optimizer.pt").string());
  absl::Status status =
      optimizer.LoadState((final_dir / "optimizer.pt").string());
  if (!status.ok()) return status;
  return true;
} catch (const std::exception& error) {
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint in ", dir, " does not load: ", error.what()));
}

}  // namespace entrograd::workers
