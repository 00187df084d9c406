// traces/format/input_file.hpp: every input read once. A folder, a missing
// file and a file past its limit say which and why; a prefix stream gives the
// line a reader looked at and then the rest, so the input is never opened
// twice; a pipe is read as a file is.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include "traces/format/input_file.hpp"

namespace capsim {
namespace {

namespace fs = std::filesystem;

std::string read_whole(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_CASE("input file: a folder, a missing file and a file past its limit say why") {
  const fs::path dir = fs::temp_directory_path() / "capsim_test_input_dir";
  fs::create_directories(dir);
  CHECK(open_input(dir.string()).error().message == dir.string() + ": cannot read: Is a directory");
  CHECK(open_input((dir / "nope").string()).error().message ==
        (dir / "nope").string() + ": cannot open: No such file or directory");
  const fs::path file = dir / "ten.txt";
  std::ofstream(file) << "0123456789";
  CHECK(read_input(file.string(), 10, "program").value() == "0123456789");
  CHECK(read_input(file.string(), 9, "program", " (hint)").error().message ==
        file.string() + ": more than 9 bytes, a program's limit (hint)");
  fs::remove_all(dir);
  CHECK(input_name("-") == "<stdin>");
  CHECK(input_name("a.jsonl") == "a.jsonl");
}

TEST_CASE("input file: a prefix stream gives the first line, then the rest, in blocks") {
  std::string rest;
  for (int i = 0; i < 20000; ++i) rest += "line " + std::to_string(i) + "\n";
  auto in = std::make_unique<std::istringstream>(rest);
  std::string first;
  std::getline(*in, first);
  std::unique_ptr<std::istream> whole = with_prefix(first + "\n", std::move(in));
  CHECK(read_whole(*whole) == rest);
  // An empty prefix, and an empty rest.
  CHECK(read_whole(*with_prefix("", std::make_unique<std::istringstream>("x\n"))) == "x\n");
  CHECK(read_whole(*with_prefix("only\n", std::make_unique<std::istringstream>(""))) == "only\n");
}

TEST_CASE("input file: a FIFO is opened once and read whole") {
  const fs::path fifo = fs::temp_directory_path() / "capsim_test_input_fifo";
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&fifo] { std::ofstream(fifo) << "a\nb\n"; });
  Result<std::string> got = read_input(fifo.string(), 1 << 20, "limits file");
  writer.join();
  fs::remove(fifo);
  REQUIRE(got.ok());
  CHECK(*got == "a\nb\n");
}

}  // namespace
}  // namespace capsim
