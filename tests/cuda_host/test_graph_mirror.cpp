// The check that a graph read back from the driver mirrors its StepProgram
// (cuda_reference/graph_mirror.hpp), without a GPU: readings are built as the
// CUDA backend will build them (kernel parameters through the ABI table, real
// addresses through the registry), then broken one way at a time.
#include <doctest/doctest.h>

#include <vector>

#include "cuda_reference/graph_mirror.hpp"
#include "cuda_reference/kernel_abi.hpp"
#include "model/kernel_launch.hpp"

namespace capsim::cuda {
namespace {

constexpr std::uint64_t kDev = 0x7a0000000000ull;
constexpr Address kSim = 0x7f0000000000ull;

TensorArg arg(Address address, const Dims& sizes) {
  return {address, contiguous_meta(sizes).value()};
}

struct Fixture {
  StepProgram program;
  BufferRegistry registry;
  std::vector<NodeReading> nodes;
  std::vector<ParamBlock> blocks = std::vector<ParamBlock>(8);

  Fixture() {
    program.name = "g0";
    program.add(
        launch_binary(KernelKind::kAdd, arg(kSim + 1024, {4}), arg(kSim, {4}), arg(kSim + 512, {4}))
            .value());
    program.add(CopyStep{kSim + 1536, kSim + 1024, 16}, {0});
    program.add(MemsetStep{kSim + 2048, 64, 0}, {0, 1});
    REQUIRE(validate(program));
    REQUIRE(registry.add({"segment 0", BufferKind::kDevice, kDev, 2 * kMiB, 1, kSim}));
    for (StepIndex i = 0; i < program.steps.size(); ++i) nodes.push_back(reading(i));
  }

  // What the driver would report for step i of a faithful graph.
  NodeReading reading(StepIndex i) {
    const Step& step = program.steps[i];
    NodeReading n;
    n.deps.assign(step.deps.begin(), step.deps.end());
    const auto dev = [&](Address a) { return registry.to_device(a).value(); };
    if (const auto* k = std::get_if<KernelLaunch>(&step.op)) {
      n.type = GraphNodeType::kKernel;
      std::vector<std::uint64_t> pointers;
      for (int p = 0; p < signature(k->kind).num_pointers; ++p)
        pointers.push_back(dev(k->pointers[p]));
      REQUIRE(encode_params(*k, pointers, blocks[i]));
      std::vector<const void*> args(blocks[i].args.begin(), blocks[i].args.end());
      n.kernel = decode_params(k->kind, args).value();
    } else if (const auto* c = std::get_if<CopyStep>(&step.op)) {
      n.type = GraphNodeType::kMemcpy;
      n.copy = {dev(c->dst), dev(c->src), c->bytes};
    } else {
      const auto& m = std::get<MemsetStep>(step.op);
      n.type = GraphNodeType::kMemset;
      n.memset = {dev(m.dst), m.bytes, m.value};
    }
    return n;
  }

  std::string error() const {
    auto r = verify_mirror(program, nodes, registry);
    return r ? "" : r.error().message;
  }
};

TEST_CASE("cuda host: a faithful graph mirrors its program and bakes every pointer use") {
  Fixture f;
  Result<std::vector<BakedRange>> baked = verify_mirror(f.program, f.nodes, f.registry);
  REQUIRE(baked);
  const std::vector<PointerUse> uses = pointer_uses(f.program);
  REQUIRE(baked->size() == uses.size());
  for (std::size_t i = 0; i < uses.size(); ++i) {
    CHECK((*baked)[i].step == uses[i].step);
    CHECK((*baked)[i].arg == uses[i].arg);
    CHECK((*baked)[i].address == uses[i].range.base - kSim + kDev);
    CHECK((*baked)[i].bytes == uses[i].range.bytes);
    CHECK((*baked)[i].buffer == 0);
  }
  CHECK(check_same_baked(*baked, *baked));
}

TEST_CASE("cuda host: every way a graph can differ from its program is named") {
  Fixture f;
  SUBCASE("a node missing (a silently dropped capture)") {
    f.nodes.pop_back();
    CHECK(f.error().find("reports 2 nodes, the program has 3 steps") != std::string::npos);
  }
  SUBCASE("a node of another type") {
    f.nodes[1].type = GraphNodeType::kOther;
    f.nodes[1].other_type = "mem_alloc";
    CHECK(f.error().find("node 1 is a mem_alloc node, a type the backend never builds") !=
          std::string::npos);
  }
  SUBCASE("a node of another known type") {
    f.nodes[1].type = GraphNodeType::kMemset;
    CHECK(f.error().find("node 1 is a memset node, the step a copy") != std::string::npos);
  }
  SUBCASE("other dependencies") {
    f.nodes[2].deps = {1};
    CHECK(f.error().find("node 2 depends on nodes [1], the step on steps [0, 1]") !=
          std::string::npos);
  }
  SUBCASE("a kernel pointer outside every buffer") {
    f.nodes[0].kernel->pointers[1] = kDev + 4 * kMiB;
    CHECK(f.error().find("outside every registered buffer") != std::string::npos);
  }
  SUBCASE("a kernel pointer at another address of the segment") {
    f.nodes[0].kernel->pointers[2] += 512;
    CHECK(f.error().find("argument 2 points at") != std::string::npos);
  }
  SUBCASE("a range that runs off its buffer") {
    f.nodes[1].copy.src = kDev + 2 * kMiB - 8;
    CHECK(f.error().find("runs 8 bytes past its end") != std::string::npos);
  }
  SUBCASE("another kernel") {
    f.nodes[0].kernel->kind = KernelKind::kSub;
    CHECK(f.error().find("runs kernel sub, the step add") != std::string::npos);
  }
  SUBCASE("another geometry") {
    f.nodes[0].kernel->geometry[1].strides[0] = 2;
    CHECK(f.error().find("the geometry of a differs") != std::string::npos);
  }
  SUBCASE("a memset of another value") {
    f.nodes[2].memset.value = 1;
    CHECK(f.error().find("sets 64 bytes to 1") != std::string::npos);
  }
}

TEST_CASE("cuda host: a graph that bakes another pointer after a replay is caught") {
  Fixture f;
  const std::vector<BakedRange> baseline = verify_mirror(f.program, f.nodes, f.registry).value();
  std::vector<BakedRange> now = baseline;
  now[3].address += 64;
  const Status s = check_same_baked(baseline, now);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("node 1 argument 0: the graph now bakes") != std::string::npos);
  now.pop_back();
  CHECK_FALSE(check_same_baked(baseline, now));
}

}  // namespace
}  // namespace capsim::cuda
