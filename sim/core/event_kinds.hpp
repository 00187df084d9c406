// The kinds of event a simulator emits, with the names traces give them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace capsim {

// X(enumerator, name)
#define CAPSIM_EVENT_KINDS(X)                                                           \
  X(kCompile, "compile")                  /* a new FunctionId for a function and key */ \
  X(kWarmup, "warmup")                    /* an eager run inside the pool */            \
  X(kRecord, "record")                    /* a new CUDAGraphNode */                     \
  X(kReplay, "replay")                    /* an existing node was replayed */           \
  X(kCopyIn, "copy_in")                   /* non-static inputs copied before replay */  \
  X(kEager, "eager")                      /* an eager fallback: no graph, no pool */    \
  X(kCheckpoint, "checkpoint")            /* allocator restored to a node's state */    \
  X(kPathEnd, "path_end")                 /* current_node set to None */                \
  X(kDealloc, "dealloc")                  /* live path outputs freed and poisoned */    \
  X(kGenerationClone, "generation_clone") /* live user-visible outputs cloned */        \
  X(kAlignClone, "align_clone")           /* a misaligned input cloned */               \
  X(kDemote, "demote")                    /* 2.15: a managed input becomes a copy */    \
  X(kSkip, "skip")                        /* a cudagraph skip, with PyTorch's text */   \
  X(kWarning, "warning")                  /* a PyTorch warning, with its text */        \
  X(kError, "error")                      /* a modelled PyTorch error, with its text */ \
  X(kOutput, "output")                    /* a call's output bound to a name */         \
  X(kRead, "read")                        /* the program read a tensor's values */      \
  X(kOptimizer, "optimizer")              /* an optimizer was created or dropped */     \
  X(kZeroGrad, "zero_grad")               /* zero_grad and what it did to each grad */  \
  X(kShutdown, "shutdown")                /* the tree manager was dropped */            \
  X(kCaCacheHit, "ca_cache_hit")          /* compiled autograd: a cached graph */       \
  X(kCaCacheMiss, "ca_cache_miss")        /* compiled autograd: a new capture */        \
  X(kMetadataRead, "metadata_read")       /* a capture read a proxy's metadata */       \
  X(kCaCapture, "ca_capture")             /* the captured graph */                      \
  X(kCaRun, "ca_run")                     /* the captured graph ran */                  \
  X(kDevice, "device")                    /* a backend's evidence of a replay */        \
  X(kCaGraph, "ca_graph")                 /* compiled autograd: the captured calls */   \
  X(kBackward, "backward")                /* a backward of the World's autograd ran */

enum class EventKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_EVENT_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view event_kind_name(EventKind kind);
std::optional<EventKind> event_kind_from_name(std::string_view name);

}  // namespace capsim
