// Graph partitions and the compile-time skips of newer releases: what
// Inductor decides about a graph before it wraps anything in cudagraphs.
//
// With torch._inductor.config.graph_partition (on by default from 2.9),
// Inductor does not skip a graph with CPU ops or cudagraph-unsafe ops: its
// scheduler (Scheduler.should_partition) cuts the graph around them, and
// output_code.py's cudagraph_partition_post_compile wraps each remaining
// partition as its own cudagraph tree function, whose static inputs are the
// graph's static inputs it receives (cudagraph_utils.py,
// get_partition_cudagraph_metadata). The code between partitions runs
// eagerly, outside the tree's pool. Without graph_partition the same ops
// skip the whole graph, with the texts of compile_fx.py and
// cudagraph_utils.py (check_lowering_disable_cudagraph).
//
// A program declares the ops that would cut (FunctionDef::partition_cuts);
// this file turns them into the pieces the World runs. Plain functions over
// plain data; nothing here touches memory or the manager.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/fault.hpp"
#include "sim/core/cudagraph_config.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

// A compile-time reason not to cudagraph a graph: the skip's id and text.
struct GraphSkip {
  Decision id;  // the skip's S-id
  std::string message;
  // False where PyTorch drops cudagraphs without a word: no log, no
  // cudagraph_skips count, no RuntimeError under cudagraph_or_error.
  bool logged = true;
};

// The reasons fx_codegen_and_compile checks before the mutation check, in
// its order: symbolic shapes and a cudagraph-unsafe op (both S5, the
// spec's ids), the caching allocator (S6, capsim's), a CPU op (S2), more
// than one device (S3). `dynamic`: the graph has symint inputs. `fault`
// (a negative control, model/fault.hpp) may switch one skip's check off.
std::optional<GraphSkip> lowering_skip(const FunctionDef& def, const CudagraphConfig& config,
                                       bool dynamic, Fault fault = Fault::kNone);

// CompiledFxGraph.__init__'s own reasons, once no lowering reason applies.
// An input rebound by set_ (S7, capsim's id, 2.13 on) is logged on every
// path and wins over the compile-time mutation check (S1).
std::optional<GraphSkip> storage_mutation_skip(const FunctionDef& def,
                                               const CudagraphConfig& config,
                                               Fault fault = Fault::kNone);
// Then the failed cudagraph tests (S4: non-Tensor inputs), logged as a list
// without graph_partition; with it, cudagraph_partition_post_compile drops
// cudagraphs silently (pytorch/pytorch#193044 would report it).
struct DynamoArg;  // sim/world/dynamo.hpp, which includes this header
std::optional<GraphSkip> fail_reasons_skip(const FunctionDef& def, std::span<const DynamoArg> args,
                                           const CudagraphConfig& config,
                                           Fault fault = Fault::kNone);

// One piece of a partitioned function: ops [begin, end) of the graph, either
// a cudagraphed partition or eager code between partitions.
struct Segment {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  bool cudagraphed = false;
  std::uint32_t partition = 0;  // among the cudagraphed pieces, from 0
  // The piece as a body of its own: the graph's values it reads become its
  // inputs (`inputs` names them; a view made outside the piece is read
  // through its base, and made again at the top of the body, as Inductor's
  // partition signature names a ReinterpretView's base), the values later
  // pieces or the graph's outputs use become its outputs (`outputs`).
  FunctionDef def;
  std::vector<ValueIndex> inputs;
  std::vector<ValueIndex> outputs;
};

// The pieces of `def`, in graph order, or none when it is not partitioned
// (graph_partition off, or no cut applies). The pieces may all be eager
// (cudagraph_min_partition_size); then no tree function is made and the
// graph runs eagerly, as PyTorch does when there are no partition maps.
std::optional<std::vector<Segment>> partition_function(const FunctionDef& def,
                                                       const CudagraphConfig& config, bool dynamic);

// The cuts that apply under `config`: CPU, unsafe and custom_should_partition
// ops always, dynamic-shape ops only with cudagraph_skip_dynamic_graphs on a
// dynamic graph in a release whose partitioner handles them.
std::vector<PartitionCut> applied_cuts(const FunctionDef& def, const CudagraphConfig& config,
                                       bool dynamic);

// The FX node name of op `k` (torch.fx numbers repeats: add, add_1, ...).
std::string fx_node_name(const FunctionDef& def, std::uint32_t k);

// Ops that launch a kernel (views launch none), as count_kernel_nodes counts.
std::size_t kernel_ops(const FunctionDef& def, std::uint32_t begin, std::uint32_t end);

}  // namespace capsim
