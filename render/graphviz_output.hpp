// Writing a drawing to disk: DOT always, SVG or PNG through libgvc.
//
// Graphviz runs in-process (libgvc and cgraph, no `dot` subprocess), but in a
// forked child: a layout can take minutes on an unlucky graph and `dot` is
// known to segfault on some (docs/rendering.md, "Limits and safety"), so the
// child gets an alarm of `timeout_s` seconds from the kernel (no clock is read
// here) and a crash or a timeout is an error value in the parent, never the
// end of capsim. Every file goes through model/output_file.hpp (a temporary
// renamed into place for a regular file, in place for a device or a FIFO), so
// a failed or interrupted render leaves nothing partial behind. Beside an SVG
// or PNG the DOT it came from is kept (FILE.dot): the text can be diffed and
// laid out again by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"

namespace capsim {

// X(enumerator, extension)
#define CAPSIM_OUTPUT_FORMATS(X) \
  X(kDot, "dot")                 \
  X(kSvg, "svg")                 \
  X(kPng, "png")

enum class OutputFormat : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_OUTPUT_FORMATS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view output_format_name(OutputFormat format);
// From FILE's extension; the error names the file and the formats known.
Result<OutputFormat> output_format_of(std::string_view path);

struct LayoutOptions {
  std::uint32_t timeout_s = 60;
};
inline constexpr std::uint32_t kMaxLayoutTimeout = 3600;

// What write_drawing wrote, in order. A layout that failed (Graphviz could
// not parse or lay out the DOT, crashed, timed out, or has no renderer for
// the format) is no error of the caller's input: the DOT is written, no
// image is, and `layout_failure` says why (naming the image and the DOT).
struct WrittenDrawing {
  std::vector<std::string> files;
  std::optional<std::string> layout_failure;
};

// The files write_drawing(path) writes: for SVG and PNG the DOT beside it
// first, then `path`. A command refuses any of them that is one of its inputs.
Result<std::vector<std::string>> drawing_files(const std::string& path);

// Writes `dot` to `path` in the format its extension names (and, for SVG and
// PNG, the DOT beside it), each through an OutputFile. An Error is bad
// output: an unknown extension, a path that cannot be written.
Result<WrittenDrawing> write_drawing(const std::string& dot, const std::string& path,
                                     const LayoutOptions& options);

// Lays `dot` out and renders it in memory, in a child as above (tests, bench).
Result<std::string> render_in_memory(const std::string& dot, OutputFormat format,
                                     const LayoutOptions& options);

// What cgraph reads back from DOT text: node and edge counts, by the value of
// their `class` attribute ("" when absent).
struct DotCounts {
  std::size_t nodes = 0;
  std::size_t edges = 0;
  std::map<std::string, std::size_t> node_classes;
  std::map<std::string, std::size_t> edge_classes;
};
Result<DotCounts> parse_dot(const std::string& dot);

}  // namespace capsim
