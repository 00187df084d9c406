// `capsim expect`'s limits, as a user writes them: a flag's value ("N" for
// the whole run, "FUNCTION=N" for one compiled function) or a small TOML
// file beside the script:
//
//   max_rerecords = 0            # a key of CAPSIM_LIMIT_KINDS, for every function
//   errors = 0
//   [function.fwd0]              # or for one
//   max_copy_bytes_per_call = 0
//
// Bad input is an error naming the flag, or the file, line and key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"
#include "traces/analyses/expectations.hpp"

namespace capsim::cli {

// The largest limits file read (bytes): a few lines are expected.
inline constexpr std::size_t kMaxLimitsFileBytes = std::size_t{1} << 16;

Result<Limit> parse_limit_flag(LimitKind kind, const std::string& value);
// Read once (traces/format/input_file.hpp: "-", a FIFO and a process
// substitution work); each limit remembers its file, line and key
// (Limit::given_at) for the messages that come later.
Result<std::vector<Limit>> read_limits_file(const std::string& path);
// The same over a file's bytes, `name` standing for it (fuzzing reads from
// memory).
Result<std::vector<Limit>> read_limits_text(std::string_view text, const std::string& name);

}  // namespace capsim::cli
