// The dynamo room (sim/world/dynamo.hpp) on its own: the static input
// indices of a first compile with alignment demotion, the S1 check, and the
// compile cache's guards, recompiles and erase. The World's use of them is
// covered by the tree invariants (tests/sim/test_tree_invariants.cpp, 7 and 18).
#include <doctest/doctest.h>

#include "sim/world/dynamo.hpp"

using namespace capsim;

namespace {
FunctionDef def_with(std::vector<std::uint32_t> statics, std::vector<std::uint32_t> params,
                     std::uint32_t inputs) {
  FunctionDef d;
  d.name = "f";
  for (std::uint32_t i = 0; i < inputs; ++i) d.input_names.push_back("x" + std::to_string(i));
  d.static_input_idxs = std::move(statics);
  d.param_input_idxs = std::move(params);
  return d;
}
}  // namespace

TEST_CASE("dynamo: static inputs are the graph's, the params and the guarded, less the unaligned") {
  const FunctionDef d = def_with({0}, {1}, 5);
  CudagraphConfig config;
  config.inline_inbuilt_nn_modules = true;
  const std::vector<DynamoArg> args = {
      {0x1000, false, std::nullopt},
      {0x2008, true, std::nullopt},  // a param, unaligned
      {0x3000, true, std::nullopt},  // a param: static when inlined
      {0x4000, false, false},        // marked, guard=False
      {0x5000, false, std::nullopt}};
  StaticInputs s = static_input_idxs(d, args, config);
  CHECK(s.idxs == std::vector<std::uint32_t>{0, 2, 3});
  CHECK(s.demoted == std::vector<std::uint32_t>{1});
  config.inline_inbuilt_nn_modules = false;
  s = static_input_idxs(d, args, config);
  CHECK(s.idxs == std::vector<std::uint32_t>{0, 3});  // input 2 is a param, not listed
  CHECK(s.demoted == std::vector<std::uint32_t>{1});
  CHECK(is_aligned(0x7f0000000200));
  CHECK_FALSE(is_aligned(0x7f0000000204));
}

TEST_CASE("dynamo: a guarded tensor replaced by another misses, and the miss is a recompile") {
  const FunctionDef d = def_with({}, {}, 2);
  CompileCache cache;
  std::vector<DynamoArg> args = {{0x1000, false, true, 1}, {0x2000, false, std::nullopt, 2}};
  CHECK(cache.find(&d, {}, args).hit == nullptr);
  CHECK_FALSE(cache.find(&d, {}, args).recompile);  // never seen: a first compile
  cache.insert(&d, {}, args).fid = FunctionId{0};
  CHECK(cache.find(&d, {}, args).hit->fid == FunctionId{0});
  args[1].data_ptr = 0x9000;  // not guarded: still a hit
  args[1].object = 7;
  CHECK(cache.find(&d, {}, args).hit != nullptr);
  // Guarded, the same object with new storage (`t.data = new`): ID_MATCH
  // holds (the tree manager then sees a moved static input).
  args[0].data_ptr = 0x8000;
  CHECK(cache.find(&d, {}, args).hit != nullptr);
  args[0].object = 3;  // guarded, another tensor: ID_MATCH fails
  const CompileCache::Lookup moved = cache.find(&d, {}, args);
  CHECK(moved.hit == nullptr);
  CHECK(moved.recompile);
  CHECK_FALSE(cache.find(&d, {3}, args).recompile);  // another int key: a first compile
  cache.insert(&d, {}, args);                        // cudagraphs skipped: no fid
  CHECK(cache.erase(&d) == 1);
  CHECK(cache.erase(&d) == 0);
  CHECK(cache.find(&d, {}, args).hit == nullptr);
}
