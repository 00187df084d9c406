// Reading an input file once: the one way every capsim reader opens what a
// command line names (a trace, a program, a limits file).
//
// An input is read exactly once, front to back, so that anything a shell can
// hand over works: a regular file, a FIFO, a process substitution
// (`capsim explain <(zcat run.jsonl.gz)`, a pipe at /dev/fd/N), and `-`,
// standard input. Nothing seeks, asks for a size first or opens the path a
// second time: a second open of a pipe blocks for ever or reads it empty.
// A size limit is checked on the bytes as they are read, never on a size
// the file system claims (a pipe has none).
//
// What goes wrong is an error naming the path (escaped as every message is)
// and saying why, as the trace readers always did: a folder ("cannot read:
// Is a directory"), a missing or unreadable file ("cannot open: " and the
// errno text), a file past the limit ("N bytes, more than a WHAT's limit of
// M").
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>

#include "model/result.hpp"

namespace capsim {

// "-" as an input path: standard input.
inline constexpr std::string_view kStdinPath = "-";
// How standard input is named in messages ("<stdin>:3:7: field ...").
inline constexpr std::string_view kStdinName = "<stdin>";

// The name of `path` in messages: "<stdin>" for "-", else the path itself
// (unescaped: messages escape it as they escape everything).
std::string input_name(const std::string& path);

// `path` opened for reading, once.
Result<std::unique_ptr<std::istream>> open_input(const std::string& path);

// Every byte of `path`, read once; more than `max_bytes` is an error naming
// `what` ("program": "P: more than N bytes, a program's limit"), with `hint`
// after it, and nothing is read past the chunk that passed the limit.
Result<std::string> read_input(const std::string& path, std::uint64_t max_bytes,
                               std::string_view what, std::string_view hint = {});
// The same over an open stream, named `name` in messages.
Result<std::string> read_all(std::istream& in, const std::string& name, std::uint64_t max_bytes,
                             std::string_view what, std::string_view hint = {});

// A stream that gives `prefix` first and then what is left of `rest`: a
// reader that looked at the first line to decide what the input is hands
// both to the reader it picked, without reading the input a second time.
std::unique_ptr<std::istream> with_prefix(std::string prefix, std::unique_ptr<std::istream> rest);

}  // namespace capsim
