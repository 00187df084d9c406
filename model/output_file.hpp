// Writing an output file without destroying what was there.
//
// Every file capsim writes (a trace, a drawing, a Chrome export, a JUnit
// report) goes through OutputFile, which picks one of three ways by what the
// path names when it is opened:
//   - a regular file, or nothing yet: the bytes go to a fresh temporary in the
//     same folder, and `commit()` renames it into place. A reader never sees
//     half a file, and a failure leaves the old file as it was. The temporary
//     is an unnamed file (O_TMPFILE), so a process that dies before commit()
//     (out of memory, SIGKILL) leaves nothing; where the file system has none,
//     a named one (mkstemp, never a fixed "PATH.tmp" that could be a user's
//     file), removed by the destructor;
//   - anything else that exists (a device such as /dev/null, a FIFO, a
//     socket) and "-" (standard output): written in place. Renaming onto
//     /dev/null as root would replace the system's device with a file;
//   - a folder: refused.
// A symbolic link is followed first: the link stays, its target gets the
// rules above. The temporary gets the mode a plain open would have given
// (0666 less the umask, or the mode of the file it replaces).
//
// `same_file` lets a command refuse an output that is one of its inputs
// before it reads anything: a rename onto the input would destroy it.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "model/result.hpp"

namespace capsim {

// "-" as an output path: standard output.
inline constexpr std::string_view kStdoutPath = "-";

class OutputFile {
 public:
  // Opens `path` for writing as above. Errors name the path and say why
  // (the errno text): a folder, a missing parent folder, no permission.
  static Result<std::unique_ptr<OutputFile>> create(const std::string& path);
  // Without commit(): the temporary is removed; a file written in place
  // keeps what was written.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Every byte or an error (a full disk, a closed pipe).
  Status write(std::string_view bytes);
  // Closes the file and renames the temporary into place.
  Status commit();

  const std::string& path() const { return path_; }
  // The temporary's path (/proc/self/fd/N while it is unnamed); empty when
  // the output is written in place.
  const std::string& temporary_path() const { return tmp_; }
  bool in_place() const { return tmp_.empty(); }
  bool is_stdout() const { return path_ == kStdoutPath; }

 private:
  OutputFile(std::string path, std::string target, std::string tmp, int fd)
      : path_(std::move(path)), target_(std::move(target)), tmp_(std::move(tmp)), fd_(fd) {}
  std::string path_;    // as the caller named it, for messages
  std::string target_;  // what the rename replaces (the link's target)
  // Gives the unnamed temporary a name beside the target, for the rename.
  Status link_unnamed();
  std::string tmp_;
  int fd_;
  bool committed_ = false;
  bool unnamed_ = false;  // tmp_ is /proc/self/fd/N, an O_TMPFILE
};

// Writes all of `bytes` to `path` through an OutputFile.
Status write_output_file(const std::string& path, std::string_view bytes);

// True when `a` and `b` name one existing file (links followed; compared by
// device and inode). False when either does not exist.
bool same_file(const std::string& a, const std::string& b);

// An error when `output` is the same file as one of `inputs`, naming both:
// "OUTPUT: is the input INPUT; writing it would destroy it". "-" never is.
Status refuse_output_onto_inputs(const std::string& output, std::span<const std::string> inputs);

}  // namespace capsim
