// Events: everything observable that a simulator does, in the order it did it.
//
// A World appends one Event per observable step (a warmup, a recording, a
// replay, a copy-in, a checkpoint, an eager fallback and its reason, a
// modelled PyTorch error with its exact text, a value read by the program,
// compiled autograd's cache decisions and captures...).
// Tests count and inspect them; the printer renders one line each; traces
// (issue 5) will store them. Fields are ordered key/value pairs so that the
// text form is stable and needs no per-kind printer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capsim {

// X(enumerator, name)
#define CAPSIM_EVENT_KINDS(X)                                                     \
  X(kCompile, "compile")            /* a new FunctionId for a function and key */ \
  X(kWarmup, "warmup")              /* an eager run inside the pool */            \
  X(kRecord, "record")              /* a new CUDAGraphNode */                     \
  X(kReplay, "replay")              /* an existing node was replayed */           \
  X(kCopyIn, "copy_in")             /* non-static inputs copied before replay */  \
  X(kEager, "eager")                /* an eager fallback: no graph, no pool */    \
  X(kCheckpoint, "checkpoint")      /* allocator restored to a node's state */    \
  X(kPathEnd, "path_end")           /* current_node set to None */                \
  X(kDealloc, "dealloc")            /* live path outputs freed and poisoned */    \
  X(kAlignClone, "align_clone")     /* a misaligned input cloned */               \
  X(kSkip, "skip")                  /* a cudagraph skip, with PyTorch's text */   \
  X(kWarning, "warning")            /* a PyTorch warning, with its text */        \
  X(kError, "error")                /* a modelled PyTorch error, with its text */ \
  X(kOutput, "output")              /* a call's output bound to a name */         \
  X(kRead, "read")                  /* the program read a tensor's values */      \
  X(kOptimizer, "optimizer")        /* an optimizer was created or dropped */     \
  X(kZeroGrad, "zero_grad")         /* zero_grad and what it did to each grad */  \
  X(kShutdown, "shutdown")          /* the tree manager was dropped */            \
  X(kCaCacheHit, "ca_cache_hit")    /* compiled autograd: a cached graph */       \
  X(kCaCacheMiss, "ca_cache_miss")  /* compiled autograd: a new capture */        \
  X(kMetadataRead, "metadata_read") /* a capture read a proxy's metadata */       \
  X(kCaCapture, "ca_capture")       /* the captured graph */                      \
  X(kCaRun, "ca_run")               /* the captured graph ran */                  \
  X(kDevice, "device")              /* a backend's evidence of a replay */        \
  X(kCaGraph, "ca_graph")           /* compiled autograd: the captured calls */

enum class EventKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_EVENT_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view event_kind_name(EventKind kind);

struct EventField {
  std::string key;
  std::string value;
  friend bool operator==(const EventField&, const EventField&) = default;
};

struct Event {
  EventKind kind = EventKind::kCompile;
  std::uint32_t action = 0;  // index of the program action that caused it
  std::vector<EventField> fields;

  // The value of `key`, if the event has it.
  std::optional<std::string_view> field(std::string_view key) const;
  friend bool operator==(const Event&, const Event&) = default;
};

// The limit on events one World may emit.
inline constexpr std::size_t kMaxEvents = std::size_t{1} << 24;

// One line: "#<action> <kind> key=value ...". Values with spaces, quotes or
// newlines are quoted with C escapes, so every event is exactly one line.
std::string format_event(const Event& event);

std::size_t count_events(const std::vector<Event>& events, EventKind kind);

// "[1,2,3]": how events write index lists and int keys.
template <typename Int>
std::string format_list(const std::vector<Int>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(values[i]);
  }
  return out + "]";
}

// "[\"a\",\"b\"]": how events write string lists (a JSON array: quotes,
// backslashes and control characters escaped as JSON does).
std::string format_text_list(const std::vector<std::string>& values);

// "[[0],[1,2],[]]": how events write lists of index lists.
template <typename Int>
std::string format_index_lists(const std::vector<std::vector<Int>>& lists) {
  std::string out = "[";
  for (std::size_t i = 0; i < lists.size(); ++i) {
    if (i != 0) out += ',';
    out += format_list(lists[i]);
  }
  return out + "]";
}

// "[0x7f0000000000,0x7f0000000200]": how events write address lists.
std::string format_addresses(const std::vector<std::uint64_t>& addresses);

}  // namespace capsim
