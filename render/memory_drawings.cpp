// The drawings of a recorded StepProgram and of a pool's layout (see memory_drawings.hpp).
#include "render/memory_drawings.hpp"

#include <fmt/format.h>

#include "model/kernel_table.hpp"
#include "render/state_colours.hpp"

namespace capsim {

namespace {

const BufferName* buffer_of(std::span<const BufferName> buffers, Address a) {
  for (const BufferName& b : buffers) {
    if (b.range.contains(a)) return &b;
  }
  return nullptr;
}

std::string pointer_text(std::span<const BufferName> buffers, const AddressRange& range) {
  const BufferName* b = buffer_of(buffers, range.base);
  if (b == nullptr) return fmt::format("unknown {:#x}", range.base);
  const std::uint64_t offset = range.base - b->range.base;
  if (offset == 0) return fmt::format("{} ({}) {:#x}", b->name, b->role, range.base);
  return fmt::format("{}+{} ({}) {:#x}", b->name, offset, b->role, range.base);
}

std::string bytes_text(std::uint64_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  return fmt::format("{} B", bytes);
}

}  // namespace

DrawGraph draw_step_program(const StepProgram& program, std::span<const BufferName> buffers,
                            std::string name) {
  DrawGraph g;
  g.name = std::move(name);
  g.kind = "program";
  const std::vector<PointerUse> uses = pointer_uses(program);
  std::size_t next_use = 0;
  for (StepIndex s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    DrawNode d;
    d.id = fmt::format("s{}", s);
    d.kind = std::string(step_kind_name(step_kind(step)));
    if (const auto* k = std::get_if<KernelLaunch>(&step.op)) {
      d.target = std::string(kernel_name(k->kind));
    } else {
      d.target = d.kind;
    }
    d.title = fmt::format("s{}: {}", s, d.target);
    bool touches_static = false;
    for (; next_use < uses.size() && uses[next_use].step == s; ++next_use) {
      const PointerUse& u = uses[next_use];
      std::string arg;
      if (const auto* k = std::get_if<KernelLaunch>(&step.op)) {
        arg = std::string(signature(k->kind).pointer_names[u.arg]);
      } else if (step_kind(step) == StepKind::kCopy) {
        arg = u.arg == 0 ? "dst" : "src";
      } else {
        arg = "dst";
      }
      const BufferName* b = buffer_of(buffers, u.range.base);
      touches_static = touches_static || (b != nullptr && b->role == "static");
      d.attrs.push_back({fmt::format("{} ({})", arg, access_name(u.access)),
                         pointer_text(buffers, u.range), std::nullopt, false});
    }
    if (const auto* c = std::get_if<CopyStep>(&step.op)) {
      d.attrs.push_back({"bytes", std::to_string(c->bytes), std::nullopt, false});
    }
    if (touches_static) d.fill = std::string(state_fill::kTrusted);
    g.add_node(std::move(d));
  }
  for (StepIndex s = 0; s < program.steps.size(); ++s) {
    for (StepIndex dep : program.steps[s].deps) g.add_edge(dep, s);
  }
  return g;
}

DrawGraph draw_pool(const PoolCheckpoint& pool, std::span<const StorageOwner> owners,
                    std::string name) {
  DrawGraph g;
  g.name = std::move(name);
  g.kind = "pool";
  g.left_to_right = true;
  for (std::size_t k = 0; k < pool.segments.size(); ++k) {
    const PoolCheckpoint::SegmentRecord& seg = pool.segments[k];
    DrawNode s;
    s.id = fmt::format("seg{}", k);
    s.kind = "segment";
    s.target = "segment";
    s.title = fmt::format("segment {:#x}", seg.range.base);
    s.fill = std::string(state_fill::kPlain);
    s.attrs.push_back({"size", bytes_text(seg.range.bytes), std::nullopt, false});
    std::uint32_t previous = g.add_node(std::move(s));
    for (const PoolCheckpoint::BlockRecord& b : seg.blocks) {
      DrawNode d;
      d.id = fmt::format("seg{}+{:#x}", k, b.address - seg.range.base);
      d.kind = "block";
      d.target = b.allocated ? "allocated" : "free";
      d.title = fmt::format("{:#x}", b.address);
      d.attrs.push_back({"size", bytes_text(b.size), std::nullopt, false});
      d.fill = std::string(state_fill::kFree);
      if (b.allocated) {
        d.attrs.push_back({"requested", bytes_text(b.requested), std::nullopt, false});
        const StorageOwner* owner = nullptr;
        for (const StorageOwner& o : owners) {
          if (o.range.base == b.address || (o.range.contains(b.address) && owner == nullptr)) {
            owner = &o;
          }
        }
        if (owner != nullptr) {
          std::string names;
          for (const std::string& n : owner->names) names += (names.empty() ? "" : ", ") + n;
          d.attrs.push_back(
              {"storage", fmt::format("s{}", owner->storage.value), std::nullopt, false});
          if (!names.empty()) d.attrs.push_back({"names", names, std::nullopt, false});
          d.attrs.push_back({"live", owner->alive ? "yes" : "no", std::nullopt, false});
          d.fill = std::string(owner->alive ? state_fill::kInUse : state_fill::kMoved);
        } else {
          d.attrs.push_back({"live", "no owner (held by the tree)", std::nullopt, false});
          d.fill = std::string(state_fill::kMoved);
        }
      } else {
        d.attrs.push_back({"state", "free", std::nullopt, false});
      }
      const std::uint32_t index = g.add_node(std::move(d));
      g.add_edge(previous, index);
      previous = index;
    }
  }
  if (pool.segments.empty()) g.notes.push_back("the pool has no segments");
  return g;
}

}  // namespace capsim
