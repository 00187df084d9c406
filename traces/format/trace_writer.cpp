// The trace writer (see trace_writer.hpp): a line at a time through an OutputFile, or a whole
// trace in one write.
#include "traces/format/trace_writer.hpp"

#include "model/check.hpp"

namespace capsim {

Result<std::unique_ptr<TraceFileWriter>> TraceFileWriter::create(const std::string& path) {
  if (path.empty()) return make_error("trace path is empty");
  CAPSIM_TRY_ASSIGN(std::unique_ptr<OutputFile> out, OutputFile::create(path));
  return std::unique_ptr<TraceFileWriter>(new TraceFileWriter(std::move(out)));
}

Status TraceFileWriter::write_line(std::string_view line) {
  CAPSIM_CHECK(line.find('\n') == std::string_view::npos, "a trace line holds no newline");
  line_.assign(line);
  line_.push_back('\n');
  return out_->write(line_);
}

Status TraceFileWriter::commit() {
  return out_->commit();
}

Status write_trace_file(const std::string& path, const std::vector<std::string>& lines) {
  if (path.empty()) return make_error("trace path is empty");
  // One write for the whole file: no reader watches this temporary grow.
  std::string text;
  for (const std::string& line : lines) {
    CAPSIM_CHECK(line.find('\n') == std::string::npos, "a trace line holds no newline");
    text += line;
    text += '\n';
  }
  return write_output_file(path, text);
}

}  // namespace capsim
