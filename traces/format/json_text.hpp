// JSON text written straight into a string, for the writers whose output is
// large enough that building a Json value per line costs more than the work
// that decides it (the Chrome export writes millions of events).
//
// The bytes are exactly those of nlohmann::json's dump() for the same values
// and key order (compact, ensure_ascii off): tests hold the two together (the
// event fields, every event and action line of the built-in scenarios), so a
// document written either way reads and diffs the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace capsim {

// The length of the valid UTF-8 sequence at the start of non-empty `s`
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
std::size_t utf8_sequence(std::string_view s);

// `s` as a JSON string, quotes included. The strings capsim writes are
// valid UTF-8 (the trace reader refuses anything else); a byte that is not
// part of a valid sequence is written as U+FFFD rather than passed on.
void append_json_string(std::string& out, std::string_view s);

// The members of one JSON object, appended in order: the caller promises
// that no key repeats (a Json object would keep the first place and the
// last value; this writes both).
class JsonObjectText {
 public:
  explicit JsonObjectText(std::string& out) : out_(out) { out_ += '{'; }
  // Writes `"key":` and returns the string, for the value to follow.
  std::string& key(std::string_view key);
  void add(std::string_view k, std::int64_t v);
  void add(std::string_view k, std::uint64_t v);
  void add(std::string_view k, int v) { add(k, static_cast<std::int64_t>(v)); }
  void add(std::string_view k, std::string_view v);
  void add(std::string_view k, const char* v) { add(k, std::string_view(v)); }
  // A value already written as JSON text.
  void add_raw(std::string_view k, std::string_view json) { key(k).append(json); }
  void close() { out_ += '}'; }

 private:
  std::string& out_;
  bool first_ = true;
};

// The same members, assigned as a Json object's are (`j["key"] = value`), so
// that one writer can fill either: the program writers' per-kind field
// functions are templates over the two. A value of any type with dump() (a
// Json) is written as its dump().
class JsonMembersText {
 public:
  explicit JsonMembersText(JsonObjectText& object) : object_(object) {}
  class Member {
   public:
    Member(JsonObjectText& object, std::string_view key) : object_(object), key_(key) {}
    void operator=(const std::string& v) { object_.add(key_, std::string_view(v)); }
    void operator=(std::string_view v) { object_.add(key_, v); }
    void operator=(const char* v) { object_.add(key_, std::string_view(v)); }
    void operator=(bool v) { object_.add_raw(key_, v ? "true" : "false"); }
    void operator=(std::int64_t v) { object_.add(key_, v); }
    void operator=(std::uint64_t v) { object_.add(key_, v); }
    void operator=(int v) { object_.add(key_, v); }
    void operator=(const std::vector<std::string>& v);
    void operator=(const std::vector<std::int64_t>& v);
    template <typename J>
    requires requires(const J& j) { j.dump(); }
    void operator=(const J& v) { object_.add_raw(key_, v.dump()); }

   private:
    JsonObjectText& object_;
    std::string_view key_;
  };
  Member operator[](std::string_view key) { return {object_, key}; }

 private:
  JsonObjectText& object_;
};

}  // namespace capsim
