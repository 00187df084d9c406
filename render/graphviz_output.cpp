// Graphviz output (see graphviz_output.hpp): libgvc's layout and render in a forked child under
// an alarm, its bytes read back through a pipe, the files written beside their DOT, and a
// parse of DOT text for its counts.
#include "render/graphviz_output.hpp"

#include <fcntl.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/output_file.hpp"

#include <fmt/format.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace capsim {

namespace {

// The child's exit codes.
constexpr int kChildParseFailed = 3;
constexpr int kChildLayoutFailed = 4;
constexpr int kChildRenderFailed = 5;
constexpr int kChildWriteFailed = 6;

// In the child: lay out, render, write all bytes to `fd`. Never returns.
[[noreturn]] void child_render(const std::string& dot, OutputFormat format, std::uint32_t timeout,
                               int fd) {
  alarm(timeout);
  GVC_t* gvc = gvContext();
  Agraph_t* g = agmemread(dot.c_str());
  if (g == nullptr) _exit(kChildParseFailed);
  if (gvLayout(gvc, g, "dot") != 0) _exit(kChildLayoutFailed);
  char* data = nullptr;
  unsigned int length = 0;
  const std::string fmt_name(output_format_name(format));
  if (gvRenderData(gvc, g, fmt_name.c_str(), &data, &length) != 0) _exit(kChildRenderFailed);
  std::size_t written = 0;
  while (written < length) {
    const ssize_t n = write(fd, data + written, length - written);
    if (n <= 0) _exit(kChildWriteFailed);
    written += static_cast<std::size_t>(n);
  }
  // No cleanup: the process ends here, and libgvc's teardown is one more
  // place to crash.
  _exit(0);
}

std::string child_failure(int status, std::uint32_t timeout) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGALRM) return fmt::format("graphviz layout timed out after {} s", timeout);
    return fmt::format("graphviz crashed (signal {}: {})", sig, strsignal(sig));
  }
  switch (WEXITSTATUS(status)) {
    case kChildParseFailed: return "graphviz could not parse the DOT";
    case kChildLayoutFailed: return "graphviz layout failed";
    case kChildRenderFailed: return "graphviz has no renderer for this format here";
    case kChildWriteFailed: return "the rendered bytes could not be passed back";
    default: return fmt::format("graphviz exited with status {}", WEXITSTATUS(status));
  }
}

}  // namespace

std::string_view output_format_name(OutputFormat format) {
  switch (format) {
#define CAPSIM_CASE_(e, name) \
  case OutputFormat::e: return name;
    CAPSIM_OUTPUT_FORMATS(CAPSIM_CASE_)
#undef CAPSIM_CASE_
  }
  return "?";
}

Result<OutputFormat> output_format_of(std::string_view path) {
  const std::string ext = std::filesystem::path(path).extension().string();
#define CAPSIM_CASE_(e, name) \
  if (ext == "." name) return OutputFormat::e;
  CAPSIM_OUTPUT_FORMATS(CAPSIM_CASE_)
#undef CAPSIM_CASE_
  // Standard output, a device or a FIFO has no extension to go by: DOT, the
  // text form, is what a pipe wants.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (path == kStdoutPath ||
      (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
       !std::filesystem::is_directory(status))) {
    return OutputFormat::kDot;
  }
  return make_error(
      fmt::format("{}: unknown output extension '{}' (use .dot, .svg or .png)", path, ext));
}

Result<std::string> render_in_memory(const std::string& dot, OutputFormat format,
                                     const LayoutOptions& options) {
  if (format == OutputFormat::kDot) return dot;
  if (options.timeout_s == 0 || options.timeout_s > kMaxLayoutTimeout) {
    return make_error(
        fmt::format("layout timeout {} s: must be 1 to {}", options.timeout_s, kMaxLayoutTimeout));
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return make_error(fmt::format("cannot make a pipe: {}", std::strerror(errno)));
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return make_error(fmt::format("cannot fork the layout: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    // A killed capsim takes its layout with it, instead of leaving it at
    // 100 % CPU until the timeout (the check closes the race with the
    // parent's death before the prctl).
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    close(pipe_fds[0]);
    child_render(dot, format, options.timeout_s, pipe_fds[1]);
  }
  close(pipe_fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) {
      bytes.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    return make_error(child_failure(status, options.timeout_s));
  }
  return bytes;
}

Result<std::vector<std::string>> drawing_files(const std::string& path) {
  CAPSIM_TRY_ASSIGN(const OutputFormat format, output_format_of(path));
  if (format == OutputFormat::kDot) return std::vector<std::string>{path};
  return std::vector<std::string>{std::filesystem::path(path).replace_extension(".dot").string(),
                                  path};
}

Result<WrittenDrawing> write_drawing(const std::string& dot, const std::string& path,
                                     const LayoutOptions& options) {
  CAPSIM_TRY_ASSIGN(const OutputFormat format, output_format_of(path));
  WrittenDrawing written;
  if (format != OutputFormat::kDot) {
    CAPSIM_TRY_ASSIGN(const std::vector<std::string> files, drawing_files(path));
    const std::string& dot_path = files.front();
    CAPSIM_TRY(write_output_file(dot_path, dot));
    written.files.push_back(dot_path);
    Result<std::string> bytes = render_in_memory(dot, format, options);
    if (!bytes) {
      written.layout_failure =
          fmt::format("{}: {} (the DOT is in {})", path, bytes.error().message, dot_path);
      return written;
    }
    CAPSIM_TRY(write_output_file(path, *bytes));
  } else {
    CAPSIM_TRY(write_output_file(path, dot));
  }
  written.files.push_back(path);
  return written;
}

Result<DotCounts> parse_dot(const std::string& dot) {
  Agraph_t* g = agmemread(dot.c_str());
  if (g == nullptr) return make_error("cgraph could not parse the DOT");
  DotCounts counts;
  char class_attr[] = "class";
  for (Agnode_t* n = agfstnode(g); n != nullptr; n = agnxtnode(g, n)) {
    ++counts.nodes;
    const char* cls = agget(n, class_attr);
    ++counts.node_classes[cls != nullptr ? cls : ""];
    for (Agedge_t* e = agfstout(g, n); e != nullptr; e = agnxtout(g, e)) {
      ++counts.edges;
      const char* ecls = agget(e, class_attr);
      ++counts.edge_classes[ecls != nullptr ? ecls : ""];
    }
  }
  agclose(g);
  return counts;
}

}  // namespace capsim
