// Drawings of what a recording baked in and of the memory it lives in: a
// recorded StepProgram and a pool's layout.
//
// A StepProgram is drawn as one box per step (a kernel, a copy, a memset) with
// one row per pointer argument, the pointer resolved to the buffer it lands in
// and that buffer's role: `static` (an input the recording trusts to stay put;
// its address is baked in), `placeholder` (a non-static input's stand-in,
// which each replay copies into), `output` or `pool` (an intermediate in the
// cudagraph pool). Edges are the steps' dependencies. Buffers are rows, not
// nodes: a buffer used by every step would be a hub (docs/rendering.md,
// "Limits and safety"). Step ids are their indices (`s3`), so a recording
// diffs against its re-recording step by step and the row that changed is the
// pointer that moved.
//
// A pool is drawn left to right, one chain per segment: the segment, then its
// blocks in address order, each with its size, whether it is allocated, the
// storage that owns it, the program's names for that storage, and whether the
// storage is still alive.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/address.hpp"
#include "model/caching_allocator.hpp"
#include "model/step_program.hpp"
#include "model/tensor_store.hpp"
#include "render/draw_graph.hpp"

namespace capsim {

// A named buffer a program's pointers may land in.
struct BufferName {
  AddressRange range;
  std::string name;  // "primals_1", "output 0", ...
  std::string role;  // "static", "placeholder", "output", "pool"
};

// Each pointer is named after the first buffer (in `buffers` order) that
// holds its start; a pointer in none of them is "unknown".
DrawGraph draw_step_program(const StepProgram& program, std::span<const BufferName> buffers,
                            std::string name);

// A storage's owner names, for the pool drawing.
struct StorageOwner {
  StorageId storage;
  AddressRange range;
  bool alive = false;
  std::vector<std::string> names;  // the program's names bound to it
};

DrawGraph draw_pool(const PoolCheckpoint& pool, std::span<const StorageOwner> owners,
                    std::string name);

}  // namespace capsim
