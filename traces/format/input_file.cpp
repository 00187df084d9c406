// Inputs read once (see input_file.hpp): a descriptor opened and checked once, read through a
// stream buffer of its own; standard input through a duplicate of descriptor 0.
#include "traces/format/input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext/stdio_filebuf.h>

#include <cerrno>
#include <cstring>

#include "traces/format/trace_reader.hpp"

namespace capsim {

namespace {

// Bytes asked of the descriptor at a time (the default, BUFSIZ, is 8 KiB).
constexpr std::size_t kReadBufferBytes = std::size_t{1} << 16;

// A stream that owns its descriptor (closed with it).
class DescriptorStream : public std::istream {
 public:
  explicit DescriptorStream(int fd)
      : std::istream(nullptr), buffer_(fd, std::ios::in, kReadBufferBytes) {
    rdbuf(&buffer_);
  }

 private:
  __gnu_cxx::stdio_filebuf<char> buffer_;
};

Error cannot(const std::string& path, std::string_view what, int err) {
  return make_error(
      fmt::format("{}: {}: {}", printable_message(input_name(path)), what, std::strerror(err)));
}

// Gives `prefix`, then reads on from `rest`'s buffer.
class PrefixBuffer : public std::streambuf {
 public:
  PrefixBuffer(std::string prefix, std::unique_ptr<std::istream> rest)
      : prefix_(std::move(prefix)), rest_(std::move(rest)) {
    char* begin = prefix_.data();
    setg(begin, begin, begin + prefix_.size());
  }

 protected:
  // The prefix first, then `rest`'s bytes a block at a time: only what its
  // buffer holds or one refill brings, so that a pipe is read as it comes.
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    std::streambuf* in = rest_->rdbuf();
    std::streamsize avail = in->in_avail();
    if (avail <= 0) {
      if (traits_type::eq_int_type(in->sgetc(), traits_type::eof())) return traits_type::eof();
      avail = std::max<std::streamsize>(in->in_avail(), 1);
    }
    if (block_.empty()) block_.resize(kReadBufferBytes);
    avail = std::min<std::streamsize>(avail, static_cast<std::streamsize>(block_.size()));
    const std::streamsize got = in->sgetn(block_.data(), avail);
    if (got <= 0) return traits_type::eof();
    setg(block_.data(), block_.data(), block_.data() + got);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string prefix_;
  std::unique_ptr<std::istream> rest_;
  std::string block_;
};

class PrefixStream : public std::istream {
 public:
  PrefixStream(std::string prefix, std::unique_ptr<std::istream> rest)
      : std::istream(nullptr), buffer_(std::move(prefix), std::move(rest)) {
    rdbuf(&buffer_);
  }

 private:
  PrefixBuffer buffer_;
};

}  // namespace

std::string input_name(const std::string& path) {
  return path == kStdinPath ? std::string(kStdinName) : path;
}

Result<std::unique_ptr<std::istream>> open_input(const std::string& path) {
  int fd = -1;
  if (path == kStdinPath) {
    fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return cannot(path, "cannot read", errno);
  } else {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cannot(path, "cannot open", errno);
  }
  // A folder opens, and then reads as an empty file: say what it is.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return cannot(path, "cannot read", err);
  }
  auto stream = std::make_unique<DescriptorStream>(fd);
  return std::unique_ptr<std::istream>(std::move(stream));
}

Result<std::string> read_all(std::istream& in, const std::string& name, std::uint64_t max_bytes,
                             std::string_view what, std::string_view hint) {
  std::string out;
  char chunk[1 << 14];
  while (in) {
    in.read(chunk, sizeof chunk);
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    if (out.size() + got > max_bytes) {
      return make_error(fmt::format("{}: more than {} bytes, a {}'s limit{}",
                                    printable_message(name), max_bytes, what, hint));
    }
    out.append(chunk, got);
  }
  if (in.bad()) {
    return make_error(fmt::format("{}: cannot read: {}", printable_message(name),
                                  std::strerror(errno != 0 ? errno : EIO)));
  }
  return out;
}

Result<std::string> read_input(const std::string& path, std::uint64_t max_bytes,
                               std::string_view what, std::string_view hint) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<std::istream> in, open_input(path));
  return read_all(*in, input_name(path), max_bytes, what, hint);
}

std::unique_ptr<std::istream> with_prefix(std::string prefix, std::unique_ptr<std::istream> rest) {
  CAPSIM_CHECK(rest != nullptr, "a stream to read on from");
  return std::make_unique<PrefixStream>(std::move(prefix), std::move(rest));
}

}  // namespace capsim
