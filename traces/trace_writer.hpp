// Writes a trace file so that readers never see a half-written one.
//
// Lines go to "<path>.tmp" and are flushed one by one, so a recorder that is
// killed leaves a valid prefix there (the reader replays a prefix and warns
// about a cut last line). `commit()` renames the file into place: the final
// name appears only complete, and an existing file of that name is replaced
// in one step, never truncated first. A writer dropped without `commit()`
// removes its temporary file, so an error leaves no partial output.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"

namespace capsim {

class TraceFileWriter {
 public:
  static Result<std::unique_ptr<TraceFileWriter>> create(const std::string& path);
  ~TraceFileWriter();
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  // One line; the newline is added. The line must not contain one.
  Status write_line(std::string_view line);
  Status commit();
  const std::string& temporary_path() const { return tmp_; }

 private:
  TraceFileWriter(std::string path, std::string tmp, std::FILE* file)
      : path_(std::move(path)), tmp_(std::move(tmp)), file_(file) {}
  std::string path_;
  std::string tmp_;
  std::FILE* file_;
  bool committed_ = false;
};

// Writes `lines` to `path` through a TraceFileWriter.
Status write_trace_file(const std::string& path, const std::vector<std::string>& lines);

}  // namespace capsim
