// The fast path's action payloads (line_fast.hpp), made from
// sim/program/actions.def: every kind whose fields are of the types read
// here, by action_json.cpp's rules (names at most kMaxJsonNameBytes, lists
// within their limits, sizes through check_shape_sizes, an absent optional
// field as its default, action_fields_problem after). A line with a field of
// another type (a dtype, strides, an optimizer's hyper-parameters), which a
// trace holds a few of, is declined and goes the general way. Every function
// here declines rather than decides: no error is made here.
#include "traces/format/fast_json.hpp"
#include "traces/format/program_json.hpp"
#include "sim/program/program.hpp"

namespace capsim::fast_line {
namespace {

// Reads one action's fields from the line's members. The first field the
// general reader would not read the same way (missing where required, of
// another type, out of its limits) turns `ok` false for good; a line is
// read only when it stays true and every key of the line was taken.
class FieldReader {
 public:
  explicit FieldReader(Members& m) : m_(m) {}
  bool ok() const { return ok_ && m_.all_taken(); }

  void name(std::string_view key, std::string& out, bool required = true) {
    if (const element* e = take(key, required)) set(out, name_of(*e));
  }
  void name(std::string_view key, std::optional<std::string>& out) {
    if (const element* e = take(key, false)) set(out, name_of(*e));
  }
  void names(std::string_view key, std::size_t limit, std::vector<std::string>& out,
             bool required = true) {
    const element* e = take(key, required);
    if (!e) return;
    set(out, list<std::string>(*e, limit, name_of));
  }
  void integers(std::string_view key, std::size_t limit, std::vector<std::int64_t>& out,
                bool required = false) {
    if (const element* e = take(key, required)) {
      set(out, list<std::int64_t>(*e, limit, integer));
    }
  }
  void integer_value(std::string_view key, std::int64_t& out, bool required = false) {
    if (const element* e = take(key, required)) set(out, integer(*e));
  }
  void sizes(std::string_view key, Dims& out, bool required = true) {
    const element* e = take(key, required);
    if (!e) return;
    auto size = [](element x) -> std::optional<std::int64_t> {
      const std::optional<std::int64_t> v = integer(x);
      if (!v || *v < 0) return std::nullopt;
      return v;
    };
    set(out, list<std::int64_t>(*e, kMaxRank, size));
    if (ok_ && !check_shape_sizes(out).ok()) ok_ = false;
  }
  void flag(std::string_view key, bool& out, bool required = false) {
    if (const element* e = take(key, required)) set(out, boolean(*e));
  }
  void flag(std::string_view key, std::optional<bool>& out) {
    if (const element* e = take(key, false)) set(out, boolean(*e));
  }
  // A float32 written as the writer writes one, a number with a fraction or
  // an exponent. An integer, which the writer never writes, goes the general
  // way: one rule fewer to keep the same in two places.
  void float32(std::string_view key, std::optional<float>& out) {
    const element* e = take(key, false);
    if (!e) return;
    double d = 0;
    // A float32 midpoint needs its text (json_fields.hpp): the general way.
    if (e->type() != element_type::DOUBLE || e->get_double().get(d) != simdjson::SUCCESS ||
        float32_midpoint(d)) {
      ok_ = false;
      return;
    }
    set(out, float32_of_double(d));
  }
  // A field this reader leaves to the general way: the line is declined
  // when it holds one, or must.
  void decline_if_held(std::string_view key, bool required) {
    if (required || m_.take(key) != nullptr) ok_ = false;
  }

 private:
  const element* take(std::string_view key, bool required) {
    const element* e = m_.take(key);
    if (!e && required) ok_ = false;
    return ok_ ? e : nullptr;
  }
  // read_name's rule: a string of at most kMaxJsonNameBytes.
  static std::optional<std::string> name_of(element e) {
    const std::optional<std::string_view> s = text(e);
    if (!s || s->size() > kMaxJsonNameBytes) return std::nullopt;
    return std::string(*s);
  }
  template <typename T, typename U>
  void set(T& out, std::optional<U> v) {
    if (v) {
      out = std::move(*v);
    } else {
      ok_ = false;
    }
  }

  Members& m_;
  bool ok_ = true;
};

// --- Field types --------------------------------------------------------------
//
// One overload per field type the fast path reads; the template declines a
// line that holds a field of any other type (or must: a required one).

template <typename Field, typename T>
void take(Field, FieldReader& r, std::string_view key, T&, bool required) {
  r.decline_if_held(key, required);
}
void take(field::Name, FieldReader& r, std::string_view key, std::string& out, bool required) {
  r.name(key, out, required);
}
void take(field::OptionalName, FieldReader& r, std::string_view key,
          std::optional<std::string>& out, bool) {
  r.name(key, out);
}
template <std::size_t limit>
void take(field::Names<limit>, FieldReader& r, std::string_view key, std::vector<std::string>& out,
          bool required) {
  r.names(key, limit, out, required);
}
template <std::size_t limit>
void take(field::Integers<limit>, FieldReader& r, std::string_view key,
          std::vector<std::int64_t>& out, bool required) {
  r.integers(key, limit, out, required);
}
void take(field::Integer, FieldReader& r, std::string_view key, std::int64_t& out, bool required) {
  r.integer_value(key, out, required);
}
void take(field::Flag, FieldReader& r, std::string_view key, bool& out, bool required) {
  r.flag(key, out, required);
}
void take(field::OptionalFlag, FieldReader& r, std::string_view key, std::optional<bool>& out,
          bool) {
  r.flag(key, out);
}
void take(field::OptionalFloat32, FieldReader& r, std::string_view key, std::optional<float>& out,
          bool) {
  r.float32(key, out);
}
void take(field::Sizes, FieldReader& r, std::string_view key, Dims& out, bool required) {
  r.sizes(key, out, required);
}

// --- The kinds ----------------------------------------------------------------
//
// Each table kind in the table's order; the kinds with codecs of their own
// are declined.

template <typename A>
bool read_fields(FieldReader&, A&) {
  return false;
}
#define CAPSIM_ACTION(Type, name)            \
  bool read_fields(FieldReader& r, Type& a) { \
    (void)r;                                  \
    (void)a;
#define CAPSIM_FIELD(Type, FieldType, member, key, default_value, presence) \
  take(FieldType{}, r, key, a.member, CAPSIM_PRESENCE_##presence == field::Presence::kRequired);
#define CAPSIM_FIELD_WHEN(Type, FieldType, member, key, default_value, condition) \
  if (condition) take(FieldType{}, r, key, a.member, true);
#define CAPSIM_ACTION_END(Type) \
  return true;                  \
  }
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_FIELD
#undef CAPSIM_FIELD_WHEN
#undef CAPSIM_ACTION_END

}  // namespace

std::optional<Action> read_action(Members& m) {
  const element* k = m.take("action");
  const std::optional<std::string_view> name = k ? text(*k) : std::nullopt;
  if (!name) return std::nullopt;
  for (const Action& kind : action_kinds()) {
    if (action_name(kind) != *name) continue;
    Action action = kind;
    FieldReader r(m);
    const bool known = std::visit([&](auto& a) { return read_fields(r, a); }, action);
    if (!known || !r.ok() || action_fields_problem(action)) return std::nullopt;
    return action;
  }
  return std::nullopt;
}

}  // namespace capsim::fast_line
