#include "aggregator/rounds/job_books.h"

#include "aggregator/rounds/memory_accounting.h"

namespace entrograd::aggregator {

namespace {

void ForgetAbort(JobState& job, std::map<RoundKey, absl::Status>::iterator it,
                 HeldTotals& held) {
  job.aborted_bytes -= AbortRecordBytes(it->second);
  held.bytes -= AbortRecordBytes(it->second);
  job.aborted.erase(it);
}

}  // namespace

void EraseRound(JobState& job, RoundKey key, HeldTotals& held) {
  auto round = job.rounds.find(key);
  if (round == job.rounds.end()) return;
  held.bytes -= round->second->bytes;
  --held.rounds_in_flight;
  job.rounds.erase(round);
}

void DropRounds(JobState& job, HeldTotals& held) {
  for (const auto& [key, round] : job.rounds) {
    held.bytes -= round->bytes;
    --held.rounds_in_flight;
  }
  job.rounds.clear();
}

void RecordAbort(JobState& job, RoundKey key, const absl::Status& reason,
                 int max_records, HeldTotals& held) {
  if (auto it = job.aborted.find(key); it != job.aborted.end()) {
    ForgetAbort(job, it, held);
  }
  job.aborted.emplace(key, reason);
  job.aborted_bytes += AbortRecordBytes(reason);
  held.bytes += AbortRecordBytes(reason);
  while (static_cast<int64_t>(job.aborted.size()) > max_records) {
    ForgetAbort(job, job.aborted.begin(), held);
  }
}

void ReleaseApplied(JobState& job, HeldTotals& held) {
  const int64_t min_applied = job.MinAppliedStep();
  // Maps are ordered by step first: what is released is a prefix of each.
  for (auto it = job.rounds.begin();
       it != job.rounds.end() && it->first.first <= min_applied;) {
    held.bytes -= it->second->bytes;
    --held.rounds_in_flight;
    it = job.rounds.erase(it);
  }
  for (auto it = job.completed.begin();
       it != job.completed.end() && it->first.first <= min_applied;) {
    if (it->second.message == nullptr) {  // still merging
      ++it;
      continue;
    }
    held.bytes -= it->second.bytes;
    it = job.completed.erase(it);
  }
  while (!job.aborted.empty() &&
         job.aborted.begin()->first.first <= min_applied) {
    ForgetAbort(job, job.aborted.begin(), held);
  }
}

bool JobCanEnd(const JobState& job) {
  if (job.HasLiveStream() || !job.rounds.empty()) return false;
  for (const auto& [key, done] : job.completed) {
    if (done.message == nullptr) return false;  // a merge is still running
  }
  return true;
}

void ReleaseJob(const JobState& job, HeldTotals& held) {
  for (const auto& [key, done] : job.completed) held.bytes -= done.bytes;
  held.bytes -= job.table_bytes + job.aborted_bytes;
}

}  // namespace entrograd::aggregator
