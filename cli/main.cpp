// The capsim binary: the command line (command_line.hpp), and the last word
// on what escapes it.
//
// A write to a closed pipe or a full disk is reported as every failed write
// to stdout is (exit 2); running out of host memory ends in one line and
// exit 3; a library bug ends in one line and exit 70. Nothing reaches the
// user as a stack trace.
#include <csignal>
#include <cstdio>
#include <exception>
#include <system_error>

#include "cli/command_line.hpp"
#include "cli/input_guards.hpp"
#include "cli/trace_commands.hpp"

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`capsim scenario --list | head -1`)
  // makes a write fail with EPIPE, reported as every failed write to stdout
  // is (exit 2, docs/reliability.md), instead of killing capsim by signal.
  std::signal(SIGPIPE, SIG_IGN);
  capsim::cli::exit_with_a_line_when_out_of_memory();
  try {
    return capsim::cli::finish_stdout(capsim::cli::run_command_line(argc, argv));
  } catch (const std::system_error& e) {
    // fmt::print throws when stdout cannot take its bytes (a full disk, a
    // closed pipe); its code is the write's errno.
    if (std::ferror(stdout)) return capsim::cli::finish_stdout(0, e.code().value());
    capsim::cli::stderr_line(std::string("capsim: internal error: ") + e.what());
    return 70;
  } catch (const std::exception& e) {
    if (std::ferror(stdout)) return capsim::cli::finish_stdout(0);
    // A library bug, not user input; still one line, never a stack trace.
    capsim::cli::stderr_line(std::string("capsim: internal error: ") + e.what());
    return 70;
  }
}
