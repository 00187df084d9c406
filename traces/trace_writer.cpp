#include "traces/trace_writer.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "model/check.hpp"

namespace capsim {

Result<std::unique_ptr<TraceFileWriter>> TraceFileWriter::create(const std::string& path) {
  if (path.empty()) return make_error("trace path is empty");
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return make_error(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
  }
  return std::unique_ptr<TraceFileWriter>(new TraceFileWriter(path, std::move(tmp), f));
}

TraceFileWriter::~TraceFileWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(tmp_.c_str());
}

Status TraceFileWriter::write_line(std::string_view line) {
  CAPSIM_CHECK(!committed_ && file_ != nullptr, "write after commit");
  CAPSIM_CHECK(line.find('\n') == std::string_view::npos, "a trace line holds no newline");
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fputc('\n', file_) == EOF || std::fflush(file_) != 0) {
    return make_error(fmt::format("{}: write failed: {}", tmp_, std::strerror(errno)));
  }
  return {};
}

Status TraceFileWriter::commit() {
  CAPSIM_CHECK(!committed_ && file_ != nullptr, "commit twice");
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0)
    return make_error(fmt::format("{}: close failed: {}", tmp_, std::strerror(errno)));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return make_error(
        fmt::format("{}: cannot rename to {}: {}", tmp_, path_, std::strerror(errno)));
  }
  committed_ = true;
  return {};
}

Status write_trace_file(const std::string& path, const std::vector<std::string>& lines) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceFileWriter> w, TraceFileWriter::create(path));
  for (const std::string& line : lines) CAPSIM_TRY(w->write_line(line));
  return w->commit();
}

}  // namespace capsim
