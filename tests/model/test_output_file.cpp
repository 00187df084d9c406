// OutputFile: a regular file is replaced through a temporary, anything else
// is written in place, a link survives, a folder is refused, and an output
// that is an input is caught before anything is written.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include "model/output_file.hpp"

namespace capsim {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test case, removed after it.
struct Scratch {
  fs::path dir;
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "capsim-output-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  std::string at(const char* name) const { return (dir / name).string(); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
  }
};

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST_CASE("output file: a regular file is replaced only on commit") {
  Scratch s;
  const std::string path = s.at("t.jsonl");
  put(path, "old\n");
  REQUIRE(chmod(path.c_str(), 0604) == 0);
  {
    auto out = OutputFile::create(path);
    REQUIRE(out.ok());
    CHECK_FALSE((*out)->in_place());
    // An unnamed file (O_TMPFILE), or a named one beside the target.
    const std::string tmp = (*out)->temporary_path();
    CHECK((tmp.starts_with("/proc/self/fd/") || fs::path(tmp).parent_path() == s.dir));
    REQUIRE((*out)->write("new\n").ok());
    CHECK(contents(path) == "old\n");  // nothing seen before the rename
  }
  // Dropped without commit: the old file stands and no temporary is left.
  CHECK(contents(path) == "old\n");
  CHECK(s.entries() == 1);
  REQUIRE(write_output_file(path, "new\n").ok());
  CHECK(contents(path) == "new\n");
  CHECK((fs::status(path).permissions() & fs::perms::mask) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read));
  CHECK(s.entries() == 1);
}

TEST_CASE("output file: a user's NAME.tmp is never touched") {
  Scratch s;
  put(s.at("t.jsonl.tmp"), "mine");
  REQUIRE(write_output_file(s.at("t.jsonl"), "x").ok());
  CHECK(contents(s.at("t.jsonl.tmp")) == "mine");
}

TEST_CASE("output file: a FIFO is written in place and stays a FIFO") {
  Scratch s;
  const std::string fifo = s.at("pipe");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] { got = contents(fifo); });
  {
    auto out = OutputFile::create(fifo);
    REQUIRE(out.ok());
    CHECK((*out)->in_place());
    REQUIRE((*out)->write("line\n").ok());
    REQUIRE((*out)->commit().ok());
  }
  reader.join();
  CHECK(got == "line\n");
  CHECK(fs::is_fifo(fifo));
}

TEST_CASE("output file: a link stays a link and its target is written") {
  Scratch s;
  put(s.at("real"), "old");
  fs::create_symlink("real", s.at("link"));
  REQUIRE(write_output_file(s.at("link"), "new").ok());
  CHECK(fs::is_symlink(s.at("link")));
  CHECK(contents(s.at("real")) == "new");
  // A dangling link creates its target.
  fs::create_symlink("later", s.at("dangling"));
  REQUIRE(write_output_file(s.at("dangling"), "made").ok());
  CHECK(fs::is_symlink(s.at("dangling")));
  CHECK(contents(s.at("later")) == "made");
}

TEST_CASE("output file: folders, missing folders and empty paths are refused") {
  Scratch s;
  const Status dir = write_output_file(s.dir.string(), "x");
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error().message == s.dir.string() + ": cannot write: Is a directory");
  const Status missing = write_output_file(s.at("no/such/t"), "x");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.ends_with("no/such/t: cannot write: No such file or directory"));
  CHECK_FALSE(write_output_file("", "x").ok());
}

TEST_CASE("output file: an output that is an input is refused") {
  Scratch s;
  put(s.at("in"), "trace");
  fs::create_symlink("in", s.at("alias"));
  const std::string inputs[] = {s.at("other"), s.at("in")};
  CHECK(refuse_output_onto_inputs(s.at("new"), inputs).ok());
  CHECK(refuse_output_onto_inputs("-", inputs).ok());
  const Status same = refuse_output_onto_inputs(s.at("in"), inputs);
  REQUIRE_FALSE(same.ok());
  CHECK(same.error().message.find("is the input") != std::string::npos);
  CHECK_FALSE(refuse_output_onto_inputs(s.at("alias"), inputs).ok());
  CHECK(same_file(s.at("alias"), s.at("in")));
  CHECK_FALSE(same_file(s.at("in"), s.at("new")));
}

}  // namespace
}  // namespace capsim
