// Writes a trace file so that readers never see a half-written one.
//
// The lines go through an OutputFile (model/output_file.hpp): for a regular
// file, a temporary in the same folder, flushed line by line, so a recorder
// that is killed leaves a valid prefix there (the reader replays a prefix and
// warns about a cut last line); `commit()` renames it into place, so the final
// name appears only complete and an existing file is replaced in one step. A
// device, a FIFO or "-" (standard output) is written in place. A writer
// dropped without `commit()` removes its temporary, so an error leaves no
// partial output.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/output_file.hpp"
#include "model/result.hpp"

namespace capsim {

class TraceFileWriter {
 public:
  static Result<std::unique_ptr<TraceFileWriter>> create(const std::string& path);

  // One line; the newline is added. The line must not contain one.
  Status write_line(std::string_view line);
  Status commit();
  // Empty when the output is written in place.
  const std::string& temporary_path() const { return out_->temporary_path(); }

 private:
  explicit TraceFileWriter(std::unique_ptr<OutputFile> out) : out_(std::move(out)) {}
  std::unique_ptr<OutputFile> out_;
  std::string line_;  // reused: the line and its newline, written at once
};

// Writes `lines` to `path` through a TraceFileWriter.
Status write_trace_file(const std::string& path, const std::vector<std::string>& lines);

}  // namespace capsim
