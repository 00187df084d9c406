// A libFuzzer-free driver for the fuzz targets (capsim_fuzz_replay).
//
// It builds with any compiler, so the fuzz target runs in every build and
// under the ASan preset even where clang and libFuzzer are missing: each file
// named on the command line (each regular file under a directory, in name
// order) goes to LLVMFuzzerTestOneInput as it is, then as N deterministic
// mutations of it. The mutations come from a seeded LCG and mix byte-level
// damage (flipped bytes, cuts, runs of '[', odd UTF-8, control bytes) with
// line-level edits (a line duplicated, dropped or swapped, a number replaced
// by a boundary value) that can keep the envelope valid, renumbering `seq`,
// action indices and events' actions afterwards so that replay runs deep.
//
//   capsim_fuzz_replay [--mutations N] [--seed S] PATH...
//
// A crash names the input on stderr and saves its bytes to
// ./capsim-fuzz-crash.jsonl; run that file alone with --mutations 0.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/lcg.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;
using capsim::testing::Lcg;

// The input being run, for the crash handler (which may only make
// async-signal-safe calls: it writes what was prepared here).
const std::string* g_current = nullptr;
char g_label[512] = "";
constexpr const char* kCrashFile = "capsim-fuzz-crash.jsonl";

extern "C" void on_crash(int sig) {
  if (g_current != nullptr) {
    const int fd = ::open(kCrashFile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!::write(fd, g_current->data(), g_current->size());
      ::close(fd);
    }
    const char head[] = "capsim_fuzz_replay: crashed on ";
    const char tail[] = "; input saved to ./capsim-fuzz-crash.jsonl\n";
    (void)!::write(2, head, sizeof head - 1);
    (void)!::write(2, g_label, std::strlen(g_label));
    (void)!::write(2, tail, sizeof tail - 1);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void run_one(const std::string& bytes, const std::string& label) {
  g_current = &bytes;
  std::snprintf(g_label, sizeof g_label, "%s", label.c_str());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  g_current = nullptr;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::size_t nl = s.find('\n', at);
    const std::size_t end = nl == std::string::npos ? s.size() : nl + 1;
    lines.push_back(s.substr(at, end - at));
    at = end;
  }
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l;
  return s;
}

// Rewrites the number after `key` in `line` (the first occurrence) to `value`.
void set_number_after(std::string& line, std::string_view key, std::uint64_t value) {
  const std::size_t at = line.find(key);
  if (at == std::string::npos) return;
  const std::size_t begin = at + key.size();
  std::size_t end = begin;
  while (end < line.size() && (std::isdigit(static_cast<unsigned char>(line[end])) != 0)) ++end;
  line.replace(begin, end - begin, std::to_string(value));
}

// Makes the envelope consistent again after lines moved: seq 0, 1, 2, ...,
// actions 0, 1, 2, ... and each event naming the latest action.
std::string renumber(const std::string& s) {
  std::vector<std::string> lines = split_lines(s);
  std::uint64_t action = 0;
  bool any_action = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    set_number_after(lines[i], "{\"seq\":", i);
    if (lines[i].find("\"type\":\"action\",\"index\":") != std::string::npos) {
      if (any_action) ++action;
      any_action = true;
      set_number_after(lines[i], "\"type\":\"action\",\"index\":", action);
    } else if (lines[i].find("\"type\":\"event\",\"action\":") != std::string::npos) {
      set_number_after(lines[i], "\"type\":\"event\",\"action\":", action);
    }
  }
  return join(lines);
}

// Values at the edges of what the reader and the model accept.
constexpr std::string_view kNumbers[] = {"0",
                                         "1",
                                         "-1",
                                         "2",
                                         "3",
                                         "7",
                                         "64",
                                         "65",
                                         "255",
                                         "256",
                                         "257",
                                         "4096",
                                         "4097",
                                         "16777216",
                                         "16777217",
                                         "2147483647",
                                         "2147483648",
                                         "4294967296",
                                         "1e9",
                                         "1.5",
                                         "-0",
                                         "1e400",
                                         "-1e400",
                                         "9223372036854775807",
                                         "9223372036854775808",
                                         "-9223372036854775808",
                                         "18446744073709551616"};

// Tokens that are odd in a trace line: bad UTF-8, escapes, control bytes.
constexpr std::string_view kTokens[] = {"\xff",
                                        "\xc3",
                                        "\xe2\x82",
                                        "\xed\xa0\x80",
                                        "\\ud800",
                                        "\\u0000",
                                        "\"",
                                        "\\",
                                        "\r",
                                        "\n",
                                        std::string_view("\0", 1),
                                        "null",
                                        "true",
                                        "[]",
                                        "{}",
                                        ",",
                                        ":",
                                        "\"x_note\":1,",
                                        "\"sizes\":[16777216,2],",
                                        "\"\":\"\",",
                                        "\t",
                                        "\xef\xbb\xbf"};

std::size_t pick(Lcg& rng, std::size_t n) {
  return n == 0 ? 0 : rng.next() % n;
}

void mutate_once(std::string& s, Lcg& rng) {
  switch (rng.next() % 12) {
    case 0: {  // flip bits of a byte
      if (s.empty()) break;
      s[pick(rng, s.size())] ^= static_cast<char>(1u << (rng.next() % 8));
      break;
    }
    case 1: {  // overwrite a byte
      if (s.empty()) break;
      s[pick(rng, s.size())] = static_cast<char>(rng.next() >> 24);
      break;
    }
    case 2: s.resize(pick(rng, s.size() + 1)); break;  // cut (a killed recorder)
    case 3: {                                          // a run of '[' or '{'
      const std::size_t n = 1 + pick(rng, 200);
      s.insert(pick(rng, s.size() + 1), n, (rng.next() & 1) != 0 ? '[' : '{');
      break;
    }
    case 4: {  // an odd token
      const std::string_view t = kTokens[pick(rng, std::size(kTokens))];
      s.insert(pick(rng, s.size() + 1), t);
      break;
    }
    case 5: {  // a number replaced by a boundary value
      std::vector<std::size_t> starts;
      for (std::size_t i = 0; i < s.size(); ++i) {
        const bool digit = std::isdigit(static_cast<unsigned char>(s[i])) != 0;
        if (digit && (i == 0 || std::isdigit(static_cast<unsigned char>(s[i - 1])) == 0)) {
          starts.push_back(i);
        }
      }
      if (starts.empty()) break;
      const std::size_t begin = starts[pick(rng, starts.size())];
      std::size_t end = begin;
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])) != 0) ++end;
      s.replace(begin, end - begin, kNumbers[pick(rng, std::size(kNumbers))]);
      break;
    }
    case 6:
    case 7:
    case 8:
    case 9: {  // line edits, then (mostly) a consistent envelope again
      std::vector<std::string> lines = split_lines(s);
      if (lines.empty()) break;
      const std::size_t i = pick(rng, lines.size());
      const std::size_t j = pick(rng, lines.size());
      switch (rng.next() % 4) {
        case 0: lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(j), lines[i]); break;
        case 1: lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i)); break;
        case 2: std::swap(lines[i], lines[j]); break;
        case 3: {  // a line repeated many times (a long trace)
          const std::string line = lines[i];
          lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), 1 + pick(rng, 64), line);
          break;
        }
      }
      s = join(lines);
      if (rng.next() % 4 != 0) s = renumber(s);
      break;
    }
    case 10: {  // a name changed: a string's first byte
      const std::size_t q = s.find("\":\"", pick(rng, s.size() + 1));
      if (q != std::string::npos && q + 3 < s.size())
        s[q + 3] = static_cast<char>('a' + rng.next() % 26);
      break;
    }
    case 11: {  // a byte range deleted
      if (s.empty()) break;
      const std::size_t at = pick(rng, s.size());
      s.erase(at, 1 + pick(rng, std::min<std::size_t>(64, s.size() - at)));
      break;
    }
  }
}

std::string mutate(const std::string& seed, Lcg& rng) {
  std::string s = seed;
  const std::size_t rounds = 1 + pick(rng, 4);
  for (std::size_t r = 0; r < rounds; ++r) mutate_once(s, rng);
  return s;
}

bool read_file(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int usage() {
  std::fprintf(stderr, "usage: capsim_fuzz_replay [--mutations N] [--seed S] PATH...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mutations = 100;
  std::uint32_t seed = 1;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--mutations" || arg == "--seed") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (end == nullptr || *end != '\0') return usage();
      if (arg == "--mutations") mutations = static_cast<std::size_t>(v);
      if (arg == "--seed") seed = static_cast<std::uint32_t>(v);
      continue;
    }
    if (arg.starts_with("--")) return usage();
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(argv[i])) {
        if (e.is_regular_file()) found.push_back(e.path());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) return usage();

  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_crash);

  std::size_t runs = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    std::string bytes;
    if (!read_file(files[f], bytes)) {
      std::fprintf(stderr, "capsim_fuzz_replay: cannot read %s\n", files[f].c_str());
      return 2;
    }
    run_one(bytes, files[f].string());
    ++runs;
    // One stream per file name: adding a file leaves the others' mutations alone.
    std::uint32_t name_hash = 2166136261u;
    for (const char c : files[f].filename().string()) {
      name_hash = (name_hash ^ static_cast<unsigned char>(c)) * 16777619u;
    }
    Lcg rng(seed * 2654435761u ^ name_hash);
    for (std::size_t k = 0; k < mutations; ++k) {
      const std::string mutated = mutate(bytes, rng);
      run_one(mutated, files[f].string() + " mutation " + std::to_string(k));
      ++runs;
    }
  }
  std::printf("capsim_fuzz_replay: %zu files, %zu inputs, no crash\n", files.size(), runs);
  return 0;
}
