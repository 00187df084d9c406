// ObjectTable: the program's Python objects and the names bound to them.
//
// A name refers to an object, which keeps its identity (PyTorch's `id(t)`),
// static mark and `.grad` while `.data =` swaps its tensor. An object lives
// while something references it (a name, an optimizer, a `.grad`, a graph
// module's attribute); the last unref drops its tensor's hold and its
// `.grad`. The World owns the table; its parts (world_context.hpp) get it by
// reference, so every lifetime is decided by these counts and TensorRefs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/result.hpp"
#include "model/tensor.hpp"
#include "sim/core/tensor_refs.hpp"

namespace capsim {

// One Python tensor object.
struct PyObject {
  TensorId tensor;  // held once by the object
  bool parameter = false;
  std::optional<bool> static_guard;  // set by mark_static_address
  std::optional<std::uint64_t> grad;
  std::uint32_t refs = 0;
  // A forward's saved tensor (an output outside user_visible_outputs): its
  // hold is a saved one (TensorRefs::mark_saved).
  bool saved_for_backward = false;
};

class ObjectTable {
 public:
  explicit ObjectTable(TensorRefs& refs) : refs_(refs) {}
  ObjectTable(const ObjectTable&) = delete;
  ObjectTable& operator=(const ObjectTable&) = delete;

  // A new object over `held_tensor` (whose hold it takes over), unreferenced:
  // the caller refs or binds it.
  std::uint64_t new_object(TensorId held_tensor, bool parameter = false);
  // The same, for a forward's saved tensor.
  std::uint64_t new_saved_object(TensorId held_tensor);
  // `.data = fresh`: the object takes over fresh's hold and gives back the
  // tensor it held, whose hold the caller drops.
  TensorId swap_tensor(std::uint64_t object, TensorId fresh);
  void ref(std::uint64_t object);
  Status unref(std::uint64_t object);
  // `name = object` (the old referent, if any, unref'd); `del name`.
  Status bind(const std::string& name, std::uint64_t object);
  Status unbind(const std::string& name);
  // The object "x" or "x.grad" refers to now.
  Result<std::uint64_t> lookup(const std::string& name) const;

  // A live object; asserted.
  PyObject& at(std::uint64_t object) { return objects_.at(object); }
  const PyObject& at(std::uint64_t object) const { return objects_.at(object); }
  // A live object, or null once it died.
  PyObject* find(std::uint64_t object);
  bool contains(std::uint64_t object) const { return objects_.count(object) != 0; }
  // Every bound name and the tensor it refers to now, in name order.
  std::vector<std::pair<std::string, TensorId>> bound_names() const;

 private:
  TensorRefs& refs_;
  std::unordered_map<std::uint64_t, PyObject> objects_;      // never iterated
  std::map<std::string, std::uint64_t, std::less<>> names_;  // found by string_view too
  std::uint64_t next_object_ = 1;
};

}  // namespace capsim
