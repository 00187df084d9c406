// Fuzz target for the command line's parsing (libFuzzer's entry point): the
// bytes are argv, one word per line (a NUL ends a word too; argv cannot hold
// one), after "capsim". Each input is parsed by capsim's own definition
// (cli/command_line.hpp), with every guard that runs before a command (the
// decimal validators, empty values, outputs onto inputs, the memory budget
// against the host), and never run. Cross-checks: nothing throws out of
// parse(); it ends in 0 (help, version), 2 with exactly one line of valid
// UTF-8 on stderr, or a chosen subcommand; and the definition's own
// assertions (every path option marked, every number decimal) hold.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/command_line.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

constexpr const char* kTarget = "fuzz_cli_args";
constexpr std::size_t kMaxWords = 64;
constexpr std::size_t kMaxWordBytes = 4096;

std::vector<std::string> words_of(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words{"capsim"};
  std::string word;
  for (std::size_t i = 0; i <= size && words.size() <= kMaxWords; ++i) {
    const char c = i < size ? static_cast<char>(data[i]) : '\n';
    if (c == '\n' || c == '\0') {
      words.push_back(word.substr(0, kMaxWordBytes));
      word.clear();
    } else {
      word += c;
    }
  }
  // A last line's newline ends the input, not one more empty word.
  if (words.size() > 1 && words.back().empty() && size > 0 && data[size - 1] == '\n') {
    words.pop_back();
  }
  return words;
}

// Runs `parse` with stdout to /dev/null and stderr captured; returns both.
struct Parsed {
  std::optional<int> code;
  std::string err;
};
Parsed parse_quietly(std::vector<std::string>& words) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  const int sink = ::memfd_create("capsim-fuzz-stderr", 0);
  FILE* null = std::fopen("/dev/null", "w");
  if (saved_out < 0 || saved_err < 0 || sink < 0 || null == nullptr) {
    capsim::fuzz::fail(kTarget, "cannot redirect stdout and stderr");
  }
  ::dup2(::fileno(null), 1);
  ::dup2(sink, 2);
  Parsed p;
  try {
    capsim::cli::CommandLine command_line;
    p.code = command_line.parse(static_cast<int>(words.size()), argv.data());
  } catch (...) {
    ::dup2(saved_err, 2);
    capsim::fuzz::fail(kTarget, "an exception escaped CommandLine::parse");
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  std::fclose(null);
  char buffer[1 << 14];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(sink, buffer, sizeof buffer, at);
    if (n <= 0) break;
    p.err.append(buffer, static_cast<std::size_t>(n));
    at += n;
  }
  ::close(sink);
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words = words_of(data, size);
  const Parsed p = parse_quietly(words);
  if (!p.code) return 0;  // a subcommand, parsed and checked, ready to run
  if (*p.code == 0) return 0;
  if (*p.code != 2) capsim::fuzz::fail(kTarget, "parse ended with an exit code other than 0 or 2");
  if (p.err.empty() || p.err.back() != '\n' || p.err.find('\n') != p.err.size() - 1) {
    capsim::fuzz::fail(kTarget, "a refusal that is not exactly one line on stderr");
  }
  capsim::Error refusal;
  refusal.message = p.err.substr(0, p.err.size() - 1);
  capsim::fuzz::check_message(kTarget, refusal);
  return 0;
}
