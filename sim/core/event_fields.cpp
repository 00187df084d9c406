// The event field table (see event_fields.hpp): event kind and field type names, and per event
// kind the fields it carries, in the order the simulator writes them.
#include "sim/core/event_fields.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "model/check.hpp"

namespace capsim {

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
#define CAPSIM_NAME_(e, name) \
  case EventKind::e: return name;
    CAPSIM_EVENT_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::optional<EventKind> event_kind_from_name(std::string_view name) {
#define CAPSIM_FROM_NAME_(e, n) \
  if (name == n) return EventKind::e;
  CAPSIM_EVENT_KINDS(CAPSIM_FROM_NAME_)
#undef CAPSIM_FROM_NAME_
  return std::nullopt;
}

std::string_view field_type_name(FieldType type) {
  switch (type) {
#define CAPSIM_NAME_(e, name, json) \
  case FieldType::e: return name;
    CAPSIM_FIELD_TYPES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

namespace {

constexpr FieldSpec kFieldSpecs[] = {
#define CAPSIM_SPEC_(e, key, type, range, meaning) \
  FieldSpec{FieldKey::e, key, FieldType::type, range, meaning},
    CAPSIM_EVENT_FIELDS(CAPSIM_SPEC_)
#undef CAPSIM_SPEC_
};
// field_spec() indexes the table by key.
static_assert([] {
  for (std::size_t i = 0; i < std::size(kFieldSpecs); ++i) {
    if (static_cast<std::size_t>(kFieldSpecs[i].field) != i) return false;
  }
  return true;
}());

// An open-addressing table of the keys by a hash of their names, built at
// compile time, for field_key_from_name: every field of every event line a
// trace holds is looked up by its name, and a scan (or a binary search) of
// the table paid a string comparison per key it passed.
constexpr std::uint64_t name_hash(std::string_view name) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}
static_assert(
    [] {
      for (std::size_t i = 0; i < std::size(kFieldSpecs); ++i) {
        for (std::size_t j = i + 1; j < std::size(kFieldSpecs); ++j) {
          if (kFieldSpecs[i].key == kFieldSpecs[j].key) return false;
        }
      }
      return true;
    }(),
    "field names are unique");
constexpr std::size_t kKeySlots = 512;  // a power of two, over twice the keys
static_assert(std::size(kFieldSpecs) * 2 < kKeySlots);
constexpr auto kKeySlotTable = [] {
  std::array<std::int16_t, kKeySlots> slots{};
  for (std::int16_t& s : slots) s = -1;
  for (std::size_t i = 0; i < std::size(kFieldSpecs); ++i) {
    std::size_t h = name_hash(kFieldSpecs[i].key) & (kKeySlots - 1);
    while (slots[h] != -1) h = (h + 1) & (kKeySlots - 1);
    slots[h] = static_cast<std::int16_t>(i);
  }
  return slots;
}();

// Per kind, in the order the simulator writes them. R marks a field every
// event of the kind carries.
#define R(key)    \
  EventFieldUse { \
    F::key, true  \
  }
#define O(key)    \
  EventFieldUse { \
    F::key, false \
  }
constexpr EventFieldUse kCompile[] = {R(function),          O(fid),       O(int_key),
                                      O(static_input_idxs), O(partition), O(recompile),
                                      O(step_params),       O(reason)};
constexpr EventFieldUse kWarmup[] = {R(fid), R(function), R(node), R(depth)};
constexpr EventFieldUse kRecord[] = {
    O(fid),         R(function), O(api),        O(graph),          O(parent),
    O(static_),     O(managed),  O(non_static), O(copied_managed), R(steps),
    O(static_ptrs), O(reason),   O(input),      O(old_ptr),        O(new_ptr)};
constexpr EventFieldUse kReplay[] = {O(fid), R(function), O(api), O(graph), O(static_ptrs)};
constexpr EventFieldUse kCopyIn[] = {O(fid), R(function), O(graph), R(copies), R(bytes)};
constexpr EventFieldUse kEager[] = {O(fid), R(function), R(reason)};
constexpr EventFieldUse kCheckpoint[] = {R(count), R(node), R(live), R(pool_blocks_before),
                                         R(pool_blocks_after)};
constexpr EventFieldUse kPathEnd[] = {R(reason)};
constexpr EventFieldUse kDealloc[] = {R(poisoned), R(freed)};
constexpr EventFieldUse kGenerationClone[] = {R(cloned), R(bytes)};
constexpr EventFieldUse kAlignClone[] = {R(function), R(input), O(demoted)};
constexpr EventFieldUse kDemote[] = {R(fid), R(function), R(parent), R(input)};
constexpr EventFieldUse kSkip[] = {R(id),    O(fid),     O(function), O(inputs), O(reason),
                                   O(input), O(old_ptr), O(new_ptr),  R(message)};
constexpr EventFieldUse kWarning[] = {R(id), O(fid), R(message)};
constexpr EventFieldUse kError[] = {R(id), R(exception), O(graph), O(where), R(message)};
constexpr EventFieldUse kOutput[] = {R(name), R(ptr)};
constexpr EventFieldUse kRead[] = {R(name), R(numel), O(digest), O(values)};
constexpr EventFieldUse kOptimizer[] = {R(name),         R(what),          O(kind),
                                        O(params),       O(static_params), O(static_state),
                                        O(static_grads), O(params_alive),  O(state_alive)};
constexpr EventFieldUse kZeroGrad[] = {R(name), R(set_to_none), R(grads)};
constexpr EventFieldUse kShutdown[] = {O(graphs), O(reason)};
constexpr EventFieldUse kCaCacheHit[] = {R(backward), R(node_calls)};
constexpr EventFieldUse kCaCacheMiss[] = {R(backward),      R(node_calls), R(reason),
                                          O(autograd_node), O(call),       O(message)};
constexpr EventFieldUse kMetadataRead[] = {R(backward), R(call), R(autograd_node), R(metadata),
                                           R(mode)};
constexpr EventFieldUse kCaCapture[] = {R(backward), R(mode), R(graph_nodes), R(graph_digest)};
constexpr EventFieldUse kCaRun[] = {R(backward), R(leaves), R(digest)};
constexpr EventFieldUse kDevice[] = {R(baked), R(baked_digest), R(digest), O(x_buffer_ids)};
constexpr EventFieldUse kCaGraph[] = {R(backward), R(captured), O(targets), O(uses), O(fx_nodes),
                                       O(reason)};
constexpr EventFieldUse kBackward[] = {R(name),   R(compiled), R(node_calls),
                                       R(leaves), O(backward), O(function)};
#undef R
#undef O

}  // namespace

std::span<const FieldSpec> event_field_specs() {
  return kFieldSpecs;
}

const FieldSpec& field_spec(FieldKey field) {
  const auto i = static_cast<std::size_t>(field);
  CAPSIM_CHECK(i < std::size(kFieldSpecs), "a field key is in the table");
  return kFieldSpecs[i];
}

std::string_view field_key_name(FieldKey field) {
  return field_spec(field).key;
}

std::optional<FieldKey> field_key_from_name(std::string_view key) {
  for (std::size_t h = name_hash(key) & (kKeySlots - 1); kKeySlotTable[h] != -1;
       h = (h + 1) & (kKeySlots - 1)) {
    const FieldSpec& spec = kFieldSpecs[static_cast<std::size_t>(kKeySlotTable[h])];
    if (spec.key == key) return spec.field;
  }
  return std::nullopt;
}

std::span<const EventFieldUse> event_fields_of(EventKind kind) {
  switch (kind) {
#define CAPSIM_KIND_TABLE_(e, name) \
  case EventKind::e: return e;
    CAPSIM_EVENT_KINDS(CAPSIM_KIND_TABLE_)
#undef CAPSIM_KIND_TABLE_
  }
  return {};
}

namespace {
constexpr std::size_t kEventKindCount = 0
#define CAPSIM_COUNT_(e, name) +1
    CAPSIM_EVENT_KINDS(CAPSIM_COUNT_)
#undef CAPSIM_COUNT_
    ;

constexpr EventFieldMasks masks_of(std::span<const EventFieldUse> uses) {
  EventFieldMasks m;
  for (const EventFieldUse& u : uses) {
    m.allowed.set(u.field);
    if (u.required) m.required.set(u.field);
  }
  return m;
}

// Built at compile time from the rows above, in EventKind order.
constexpr EventFieldMasks kEventFieldMasks[kEventKindCount] = {
#define CAPSIM_MASKS_(e, name) masks_of(e),
    CAPSIM_EVENT_KINDS(CAPSIM_MASKS_)
#undef CAPSIM_MASKS_
};
}  // namespace

const EventFieldMasks& event_field_masks(EventKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  CAPSIM_CHECK(i < kEventKindCount, "an event kind is in the table");
  return kEventFieldMasks[i];
}

const EventFieldUse* find_field_use(EventKind kind, FieldKey field) {
  const std::span<const EventFieldUse> uses = event_fields_of(kind);
  const auto it = std::find_if(uses.begin(), uses.end(),
                               [&](const EventFieldUse& u) { return u.field == field; });
  return it == uses.end() ? nullptr : &*it;
}

}  // namespace capsim
