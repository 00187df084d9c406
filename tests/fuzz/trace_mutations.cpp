// The trace mutations of trace_mutations.hpp: byte-level damage, line edits followed by a
// renumbered envelope, boundary numbers and grown lists.
#include "tests/fuzz/trace_mutations.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <vector>

namespace capsim::fuzz {

using capsim::testing::Lcg;

namespace {

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

// A number (a run of digits) replaced by a boundary value.
void replace_number(std::string& s, Lcg& rng) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(s[i])) != 0;
    if (digit && (i == 0 || std::isdigit(static_cast<unsigned char>(s[i - 1])) == 0)) {
      starts.push_back(i);
    }
  }
  if (starts.empty()) return;
  const std::size_t begin = starts[pick(rng, starts.size())];
  std::size_t end = begin;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])) != 0) ++end;
  s.replace(begin, end - begin, kNumbers[pick(rng, std::size(kNumbers))]);
}

// A line duplicated, dropped, swapped or repeated, then (mostly) a consistent
// envelope again, so that replay runs deep.
void edit_lines(std::string& s, Lcg& rng) {
  std::vector<std::string> lines = split_lines(s);
  if (lines.empty()) return;
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
}

// A huge list: a list's first element repeated thousands of times.
void grow_list(std::string& s, Lcg& rng) {
  const std::size_t open = s.find('[', pick(rng, s.size() + 1));
  if (open == std::string::npos) return;
  const std::size_t end = s.find_first_of(",]\n", open + 1);
  if (end == std::string::npos || end == open + 1 || s[end] == '\n') return;
  const std::string element = s.substr(open + 1, end - open - 1) + ",";
  const std::size_t copies = 1 + pick(rng, std::max<std::size_t>(1, 200000 / element.size()));
  std::string grown;
  grown.reserve(element.size() * copies);
  for (std::size_t k = 0; k < copies; ++k) grown += element;
  s.insert(open + 1, grown);
}

}  // namespace

void mutate_once(std::string& s, Lcg& rng) {
  switch (rng.next() % 13) {
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
    case 5: replace_number(s, rng); break;  // a number replaced by a boundary value
    case 6:
    case 7:
    case 8:
    case 9: edit_lines(s, rng); break;
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
    case 12: grow_list(s, rng); break;
  }
}

std::string mutate(const std::string& seed, Lcg& rng) {
  std::string s = seed;
  const std::size_t rounds = 1 + pick(rng, 4);
  for (std::size_t r = 0; r < rounds; ++r) mutate_once(s, rng);
  return s;
}

}  // namespace capsim::fuzz
