// The foundation's end-to-end job: one recorded optimizer step, replayed.
//
// This is the smallest honest instance of what capsim models. Params, Adam state
// and a grad placeholder live in a private pool (the cudagraph pool); the grad
// is produced eagerly outside it, so it is a non-static input and each replay
// first copies it into its placeholder. The step is recorded once as a
// StepProgram with baked addresses and replayed through the Backend. The
// cudagraph tree manager (sim/trees/tree_manager.hpp) generalises this;
// `capsim run` prints this job's report.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/result.hpp"

namespace capsim {

struct AdamReplayJobOptions {
  std::int64_t steps = 3;
  std::uint64_t seed = 0;
  std::int64_t numel = 1024;  // elements per param
  std::int64_t params = 2;
  bool poison_freed = false;
  // Called after each replay with its 1-based step (the CLI's progress
  // line); nothing of the report depends on it.
  std::function<void(std::int64_t step)> on_step;
};
// Limits that bad flags run into.
inline constexpr std::int64_t kMaxJobSteps = 1'000'000;
inline constexpr std::int64_t kMaxJobNumel = std::int64_t{1} << 22;
inline constexpr std::int64_t kMaxJobParams = 64;

struct AdamReplayStep {
  std::int64_t step = 0;
  std::uint64_t copy_in_bytes = 0;  // bytes copied into placeholders
  std::uint64_t param_digest = 0;   // FNV-1a of every param's bytes
};

struct AdamReplayReport {
  std::string graph_name;
  std::size_t program_steps = 0;
  std::size_t baked_pointers = 0;
  std::size_t pool_live_blocks = 0;
  std::uint64_t pool_allocated_bytes = 0;
  std::size_t segments = 0;
  std::vector<AdamReplayStep> steps;
};

Result<AdamReplayReport> run_adam_replay_job(const AdamReplayJobOptions& options);

}  // namespace capsim
