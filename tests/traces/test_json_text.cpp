// JSON text written straight into a string (traces/format/json_text.hpp): the same
// bytes as nlohmann::json's dump() for every string it can dump, and a
// replacement character, not an exception, for bytes that are not UTF-8.
#include <doctest/doctest.h>

#include <random>

#include "traces/format/json_fields.hpp"
#include "traces/format/json_text.hpp"

namespace capsim {
namespace {

std::string as_json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST_CASE("json text: strings are escaped as dump() escapes them") {
  for (const std::string& s :
       {std::string(""), std::string("plain"), std::string("q\"b\\s/"), std::string("\b\f\n\r\t"),
        std::string("\x01\x1f\x7f", 3), std::string("nul\0in", 6), std::string("é—𝄞"),
        std::string("\xed\x9f\xbf\xf4\x8f\xbf\xbf")}) {
    CAPTURE(s);
    CHECK(as_json_string(s) == Json(s).dump());
  }
  // Every byte below 0x80 alone, and seeded random ASCII strings.
  for (int c = 0; c < 0x80; ++c) {
    const std::string s(1, static_cast<char>(c));
    CHECK(as_json_string(s) == Json(s).dump());
  }
  std::mt19937 rng(45);
  for (int i = 0; i < 200; ++i) {
    std::string s(rng() % 40, ' ');
    for (char& c : s) c = static_cast<char>(rng() % 0x80);
    CHECK(as_json_string(s) == Json(s).dump());
  }
}

TEST_CASE("json text: bytes that are not UTF-8 become U+FFFD") {
  // A lone continuation byte, an overlong form, a surrogate, a cut sequence.
  for (const std::string_view bad : {"\x80", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82"}) {
    CAPTURE(bad);
    const std::string q = as_json_string("a" + std::string(bad) + "b");
    CHECK(q.find("\xef\xbf\xbd") != std::string::npos);
    CHECK(Json::parse(q).get<std::string>().starts_with("a"));
  }
  CHECK(utf8_sequence("\xf0\x9d\x84\x9e") == 4);
  CHECK(utf8_sequence("\xf4\x90\x80\x80") == 0);  // above U+10FFFF
}

TEST_CASE("json text: an object's members in order, numbers as dump() writes them") {
  std::string out = "[";
  JsonObjectText o(out);
  o.add("a", std::int64_t{-9223372036854775807 - 1});
  o.add("b", std::uint64_t{18446744073709551615ULL});
  o.add("c", "x");
  o.add_raw("d", "[1,null]");
  o.close();
  out += "]";
  CHECK(out == R"([{"a":-9223372036854775808,"b":18446744073709551615,"c":"x","d":[1,null]}])");
  CHECK(Json::parse(out)[0].dump() == out.substr(1, out.size() - 2));
}

}  // namespace
}  // namespace capsim
