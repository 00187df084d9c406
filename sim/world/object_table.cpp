#include "sim/world/object_table.hpp"

#include <fmt/format.h>

#include <string_view>

#include "model/check.hpp"

namespace capsim {

std::uint64_t ObjectTable::new_object(TensorId held_tensor, bool parameter) {
  const std::uint64_t id = next_object_++;
  objects_.emplace(id, PyObject{held_tensor, parameter, std::nullopt, std::nullopt, 0, false});
  return id;
}

std::uint64_t ObjectTable::new_saved_object(TensorId held_tensor) {
  const std::uint64_t id = new_object(held_tensor);
  objects_.at(id).saved_for_backward = true;
  refs_.mark_saved(held_tensor);
  return id;
}

TensorId ObjectTable::swap_tensor(std::uint64_t object, TensorId fresh) {
  PyObject& o = objects_.at(object);
  const TensorId previous = o.tensor;
  if (o.saved_for_backward) {
    refs_.unmark_saved(previous);
    refs_.mark_saved(fresh);
  }
  o.tensor = fresh;
  return previous;
}

void ObjectTable::ref(std::uint64_t object) {
  ++objects_.at(object).refs;
}

Status ObjectTable::unref(std::uint64_t object) {
  auto it = objects_.find(object);
  CAPSIM_CHECK(it != objects_.end() && it->second.refs > 0, "unref of a dead object");
  if (--it->second.refs > 0) return {};
  const PyObject dead = it->second;
  objects_.erase(it);
  if (dead.saved_for_backward) refs_.unmark_saved(dead.tensor);
  CAPSIM_TRY(refs_.drop(dead.tensor));
  if (dead.grad) CAPSIM_TRY(unref(*dead.grad));
  return {};
}

Status ObjectTable::bind(const std::string& name, std::uint64_t object) {
  if (name.empty() || name.find('.') != std::string::npos) {
    return make_error(fmt::format("name '{}': names are non-empty and have no '.'", name));
  }
  ref(object);
  auto it = names_.find(name);
  if (it != names_.end()) {
    const std::uint64_t old = it->second;
    it->second = object;
    return unref(old);
  }
  names_.emplace(name, object);
  return {};
}

Status ObjectTable::unbind(const std::string& name) {
  auto it = names_.find(name);
  if (it == names_.end()) return make_error(fmt::format("del of unknown name '{}'", name));
  const std::uint64_t object = it->second;
  names_.erase(it);
  return unref(object);
}

Result<std::uint64_t> ObjectTable::lookup(const std::string& name) const {
  const auto dot = name.find('.');
  const std::string_view base = std::string_view(name).substr(0, dot);
  auto it = names_.find(base);
  if (it == names_.end()) return make_error(fmt::format("unknown tensor '{}'", base));
  if (dot == std::string::npos) return it->second;
  if (std::string_view(name).substr(dot) != ".grad") {
    return make_error(fmt::format("'{}': the only attribute is .grad", name));
  }
  const PyObject& o = objects_.at(it->second);
  if (!o.grad) return make_error(fmt::format("'{}' is None", name));
  return *o.grad;
}

PyObject* ObjectTable::find(std::uint64_t object) {
  const auto it = objects_.find(object);
  return it == objects_.end() ? nullptr : &it->second;
}

std::vector<std::pair<std::string, TensorId>> ObjectTable::bound_names() const {
  std::vector<std::pair<std::string, TensorId>> out;
  for (const auto& [name, object] : names_) out.emplace_back(name, objects_.at(object).tensor);
  return out;
}

}  // namespace capsim
