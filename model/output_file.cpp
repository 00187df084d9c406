// OutputFile (see output_file.hpp): the temporary (unnamed where the file system allows),
// the rename into place, writing in place for devices and "-", and same_file.
#include "model/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

namespace capsim {

namespace {

// Links followed before a path is taken as a loop (as the kernel's ELOOP).
constexpr int kMaxLinkHops = 40;

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Error io_error(const std::string& path, std::string_view what, int err) {
  return make_error(fmt::format("{}: {}: {}", path, what, std::strerror(err)));
}

// Follows symbolic links, a dangling last one included, so that the rename
// replaces the link's target and never the link.
Result<std::string> resolve_links(const std::string& path) {
  std::string p = path;
  for (int hop = 0; hop < kMaxLinkHops; ++hop) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buffer(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096) + 1);
    const ssize_t n = readlink(p.c_str(), buffer.data(), buffer.size());
    if (n < 0) return io_error(path, "cannot follow the link", errno);
    std::string next(buffer.data(), static_cast<std::size_t>(n));
    p = next.starts_with('/') ? next : parent_of(p) + "/" + next;
  }
  return io_error(path, "cannot follow the link", ELOOP);
}

mode_t default_mode() {
  // umask can only be read by setting it; put it back at once.
  const mode_t mask = umask(0);
  umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

}  // namespace

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& path) {
  if (path.empty()) return make_error("output path is empty");
  if (path == kStdoutPath) {
    return std::unique_ptr<OutputFile>(new OutputFile(path, path, "", STDOUT_FILENO));
  }
  CAPSIM_TRY_ASSIGN(const std::string target, resolve_links(path));
  struct stat st {};
  const bool exists = stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return io_error(path, "cannot write", EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {
    // A device, a FIFO or a socket: written where it is, never replaced.
    const int fd = open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return io_error(path, "cannot write", errno);
    return std::unique_ptr<OutputFile>(new OutputFile(path, target, "", fd));
  }
  // A rename would replace a file we may not write; refuse as open() would.
  if (exists && access(target.c_str(), W_OK) != 0) return io_error(path, "cannot write", errno);
  const mode_t mode = exists ? static_cast<mode_t>(st.st_mode & 07777) : default_mode();
  // An unnamed file in the target's folder: whatever ends the process before
  // commit() (running out of memory, SIGKILL) leaves nothing behind. Where
  // the file system has no O_TMPFILE, a named temporary instead.
  const int unnamed = open(parent_of(target).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
  if (unnamed >= 0) {
    if (fchmod(unnamed, mode) != 0) {
      const int err = errno;
      close(unnamed);
      return io_error(path, "cannot set the mode", err);
    }
    auto out = std::unique_ptr<OutputFile>(
        new OutputFile(path, target, fmt::format("/proc/self/fd/{}", unnamed), unnamed));
    out->unnamed_ = true;
    return out;
  }
  std::string tmp = fmt::format("{}/.{}.XXXXXX.tmp", parent_of(target), base_of(target));
  const int fd = mkstemps(tmp.data(), 4);
  if (fd < 0) return io_error(path, "cannot write", errno);
  if (fchmod(fd, mode) != 0) {
    const int err = errno;
    close(fd);
    unlink(tmp.c_str());
    return io_error(path, "cannot set the mode", err);
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, target, std::move(tmp), fd));
}

Status OutputFile::link_unnamed() {
  // A name in the target's folder first (rename cannot take an unnamed
  // file), then the same rename as a named temporary's. The name is this
  // process's; one left by a process that died in between is skipped.
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name =
        fmt::format("{}/.{}.{}-{}.tmp", parent_of(target_), base_of(target_), getpid(), attempt);
    if (linkat(AT_FDCWD, tmp_.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      tmp_ = std::move(name);
      unnamed_ = false;
      return {};
    }
    if (errno != EEXIST) return io_error(path_, "cannot link the output into its folder", errno);
  }
  return io_error(path_, "cannot link the output into its folder", EEXIST);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0 && !is_stdout()) close(fd_);  // an unnamed file goes with its descriptor
  if (!committed_ && !tmp_.empty() && !unnamed_) unlink(tmp_.c_str());
}

Status OutputFile::write(std::string_view bytes) {
  CAPSIM_CHECK(!committed_ && fd_ >= 0, "write after commit");
  // What stdio holds for stdout must come first.
  if (is_stdout() && std::fflush(stdout) != 0)
    return io_error("standard output", "write failed", errno);
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return io_error(is_stdout() ? std::string("standard output") : path_, "write failed",
                      n < 0 ? errno : EIO);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

Status OutputFile::commit() {
  CAPSIM_CHECK(!committed_ && fd_ >= 0, "commit twice");
  if (unnamed_) CAPSIM_TRY(link_unnamed());
  if (!is_stdout()) {
    const int closed = close(fd_);
    fd_ = -1;
    if (closed != 0) return io_error(path_, "close failed", errno);
  }
  if (!tmp_.empty() && std::rename(tmp_.c_str(), target_.c_str()) != 0) {
    return io_error(path_, fmt::format("cannot rename {} into place", tmp_), errno);
  }
  committed_ = true;
  return {};
}

Status write_output_file(const std::string& path, std::string_view bytes) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<OutputFile> out, OutputFile::create(path));
  CAPSIM_TRY(out->write(bytes));
  return out->commit();
}

namespace {
std::optional<struct stat> stat_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}
}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  const std::optional<struct stat> sa = stat_of(a), sb = stat_of(b);
  return sa && sb && sa->st_dev == sb->st_dev && sa->st_ino == sb->st_ino;
}

Status refuse_output_onto_inputs(const std::string& output, std::span<const std::string> inputs) {
  if (output.empty() || output == kStdoutPath) return {};
  // Only a regular file is replaced (a device or a FIFO is written in place).
  const std::optional<struct stat> out = stat_of(output);
  if (!out || !S_ISREG(out->st_mode)) return {};
  for (const std::string& input : inputs) {
    if (same_file(output, input)) {
      return make_error(
          fmt::format("{}: is the input {}; writing it would destroy it (choose another output)",
                      output, input));
    }
  }
  return {};
}

}  // namespace capsim
