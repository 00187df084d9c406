// The fast path's action payloads (line_fast.hpp): the kinds a training or
// inference loop repeats, read by program_json.cpp's rules (names at most
// kMaxJsonNameBytes, lists within their limits, sizes through
// check_shape_sizes, an absent optional field as its default). The other
// kinds, which a trace holds a few of, are declined and go the general way.
// Every function here declines rather than decides: no error is made here.
#include "traces/format/fast_json.hpp"
#include "traces/format/program_json.hpp"

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

  void name(std::string_view key, std::string& out) {
    if (const element* e = take(key, true)) set(out, name_of(*e));
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
  void integers(std::string_view key, std::size_t limit, std::vector<std::int64_t>& out) {
    if (const element* e = take(key, false)) set(out, list<std::int64_t>(*e, limit, integer));
  }
  void integer_value(std::string_view key, std::int64_t& out) {
    if (const element* e = take(key, false)) set(out, integer(*e));
  }
  void sizes(std::string_view key, Dims& out) {
    const element* e = take(key, true);
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

// One overload per kind the fast path reads, each in program_json.cpp's
// read_fields order; the template declines the rest.
template <typename A>
bool read_fields(FieldReader&, A&) {
  return false;
}
bool read_fields(FieldReader& r, NewTensor& a) {
  r.name("name", a.name);
  r.sizes("sizes", a.sizes);
  r.float32("fill", a.fill);
  r.integer_value("offset", a.offset);
  r.flag("parameter", a.parameter);
  r.flag("requires_grad", a.requires_grad);
  return true;
}
bool read_fields(FieldReader& r, MarkStatic& a) {
  r.name("name", a.name);
  r.flag("guard", a.guard);
  return true;
}
bool read_fields(FieldReader& r, Call& a) {
  r.name("function", a.function);
  r.names("args", kMaxBodyInputs, a.args);
  r.names("outputs", kMaxCallOutputs, a.outputs);
  r.integers("int_key", kMaxBodyInputs, a.int_key);
  r.flag("new_invocation", a.new_invocation);
  r.names("consume", kMaxBodyInputs, a.consume, false);
  return true;
}
bool read_fields(FieldReader& r, EagerCall& a) {
  r.name("function", a.function);
  r.names("args", kMaxBodyInputs, a.args);
  r.names("outputs", kMaxCallOutputs, a.outputs);
  r.flag("no_grad", a.no_grad);
  return true;
}
template <typename A>
requires std::is_same_v<A, Del> || std::is_same_v<A, Read> || std::is_same_v<A, OptimizerStep> ||
    std::is_same_v<A, DropOptimizer>
bool read_fields(FieldReader& r, A& a) {
  r.name("name", a.name);
  return true;
}
template <typename A>
requires std::is_same_v<A, MarkStepBegin> || std::is_same_v<A, SetToRunningBackward> ||
    std::is_same_v<A, Reset>
bool read_fields(FieldReader&, A&) {
  return true;
}
bool read_fields(FieldReader& r, ReassignData& a) {
  r.name("name", a.name);
  r.float32("fill", a.fill);
  return true;
}
bool read_fields(FieldReader& r, AccumulateGrad& a) {
  r.name("param", a.param);
  r.name("grad", a.grad);
  return true;
}
bool read_fields(FieldReader& r, ZeroGrad& a) {
  r.name("name", a.name);
  r.flag("set_to_none", a.set_to_none, true);
  return true;
}
bool read_fields(FieldReader& r, Backward& a) {
  r.name("tensor", a.tensor);
  r.name("grad", a.grad);
  r.flag("retain_graph", a.retain_graph);
  r.flag("compiled", a.compiled);
  r.flag("dynamic", a.dynamic);
  return true;
}

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
    if (!known || !r.ok()) return std::nullopt;
    return action;
  }
  return std::nullopt;
}

}  // namespace capsim::fast_line
