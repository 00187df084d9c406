// A libFuzzer-free driver for the fuzz targets (capsim_fuzz_replay, _render, _diff, _export).
//
// It builds with any compiler, so the fuzz target runs in every build and
// under the ASan preset even where clang and libFuzzer are missing: each file
// named on the command line (each regular file under a directory, in name
// order) goes to LLVMFuzzerTestOneInput as it is, then as N deterministic
// mutations of it, from a seeded LCG (trace_mutations.hpp says which).
//
//   capsim_fuzz_TARGET [--mutations N] [--seed S] PATH...
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

#include "tests/fuzz/trace_mutations.hpp"
#include "tests/support/lcg.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;
using capsim::fuzz::mutate;
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
    const char head[] = "fuzz driver: crashed on ";
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

bool read_file(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int usage() {
  std::fprintf(stderr,
               "usage: capsim_fuzz_TARGET [--mutations N] [--seed S] [--budget-bytes B] PATH...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mutations = 100;
  std::uint32_t seed = 1;
  // With a budget, a file gets at most B / its size mutations (at least 10):
  // the time of a run then grows with the corpus's bytes, not with the size
  // of its largest traces times the mutation count.
  std::size_t budget_bytes = 0;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--mutations" || arg == "--seed" || arg == "--budget-bytes") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (end == nullptr || *end != '\0') return usage();
      if (arg == "--mutations") mutations = static_cast<std::size_t>(v);
      if (arg == "--seed") seed = static_cast<std::uint32_t>(v);
      if (arg == "--budget-bytes") budget_bytes = static_cast<std::size_t>(v);
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
      std::fprintf(stderr, "fuzz driver: cannot read %s\n", files[f].c_str());
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
    std::size_t count = mutations;
    if (budget_bytes != 0 && !bytes.empty()) {
      count = std::min(mutations, std::max<std::size_t>(10, budget_bytes / bytes.size()));
    }
    for (std::size_t k = 0; k < count; ++k) {
      const std::string mutated = mutate(bytes, rng);
      run_one(mutated, files[f].string() + " mutation " + std::to_string(k));
      ++runs;
    }
  }
  std::printf("fuzz driver: %zu files, %zu inputs, no crash\n", files.size(), runs);
  return 0;
}
