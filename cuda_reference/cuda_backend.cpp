// The CUDA backend's host code: plain C++20 over the CUDA runtime API (the
// device code is in device_kernels.cu). See cuda_backend.hpp for the contract
// and docs/cuda-reference.md for what it proves.
#include "cuda_reference/cuda_backend.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "cuda_reference/buffer_registry.hpp"
#include "cuda_reference/device_kernels.hpp"
#include "cuda_reference/graph_mirror.hpp"
#include "cuda_reference/kernel_abi.hpp"

namespace capsim::cuda {

namespace {

constexpr unsigned kThreads = 256;
// The pinned staging buffer: host data moves through it in chunks.
constexpr std::size_t kStagingBytes = std::size_t{4} << 20;
// The guard: an allocation no graph may touch, filled with a pattern that
// every replay must leave as it was (the behavioural check, docs/cuda-reference.md,
// of what the template cannot show).
constexpr std::size_t kGuardBytes = std::size_t{64} << 10;
constexpr unsigned char kGuardByte = 0xa5;
// The limit on graphs one backend instantiates.
constexpr std::size_t kMaxCudaGraphs = 1u << 16;

Error cuda_error(cudaError_t e, std::string_view what) {
  return make_error(
      fmt::format("cuda: {}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}
#define CAPSIM_CUDA_TRY(call, what)                              \
  do {                                                           \
    const cudaError_t capsim_cuda_err_ = (call);                 \
    if (capsim_cuda_err_ != cudaSuccess) {                       \
      return ::capsim::cuda::cuda_error(capsim_cuda_err_, what); \
    }                                                            \
  } while (false)

std::string_view node_type_name(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeKernel: return "kernel";
    case cudaGraphNodeTypeMemcpy: return "memcpy";
    case cudaGraphNodeTypeMemset: return "memset";
    case cudaGraphNodeTypeHost: return "host";
    case cudaGraphNodeTypeGraph: return "child graph";
    case cudaGraphNodeTypeEmpty: return "empty";
    case cudaGraphNodeTypeWaitEvent: return "wait event";
    case cudaGraphNodeTypeEventRecord: return "event record";
    case cudaGraphNodeTypeMemAlloc: return "memory allocation";
    case cudaGraphNodeTypeMemFree: return "memory free";
    default: return "unknown";
  }
}

struct DriverApi {
  PFN_cuPointerGetAttribute_v4000 pointer_get_attribute = nullptr;
  PFN_cuMemGetAddressRange_v3020 mem_get_address_range = nullptr;
};

template <typename Fn>
Status entry_point(const char* symbol, unsigned version, Fn& out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  CAPSIM_CUDA_TRY(cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &q),
                  fmt::format("cudaGetDriverEntryPointByVersion({})", symbol));
  if (q != cudaDriverEntryPointSuccess || fn == nullptr) {
    return make_error(
        fmt::format("cuda: the driver has no entry point {} (version {})", symbol, version));
  }
  out = reinterpret_cast<Fn>(fn);
  return {};
}

struct Graph {
  std::string name;
  StepProgram program;
  cudaGraph_t graph = nullptr;  // the template, kept: the exec cannot be read back
  cudaGraphExec_t exec = nullptr;
  std::vector<cudaGraphNode_t> nodes;  // nodes[i] runs step i
  std::vector<BakedRange> baseline;    // read back at instantiation
  std::vector<PointerUse> uses;        // the program's, in baked order
};

// The driver's identity of the allocation holding `p`.
Result<std::uint64_t> buffer_id(const DriverApi& driver, const void* p) {
  unsigned long long id = 0;
  const CUresult r = driver.pointer_get_attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                                  reinterpret_cast<CUdeviceptr>(p));
  if (r != CUDA_SUCCESS) {
    return make_error(fmt::format("cuda: cuPointerGetAttribute(BUFFER_ID, {:#x}) failed ({})",
                                  reinterpret_cast<std::uintptr_t>(p), static_cast<int>(r)));
  }
  return static_cast<std::uint64_t>(id);
}

// What the driver says of each registered buffer now, for check_unchanged.
std::vector<BufferObservation> observe(const DriverApi& driver, const BufferRegistry& registry) {
  std::vector<BufferObservation> out;
  for (const StaticBuffer& b : registry.buffers()) {
    BufferObservation o;
    unsigned long long id = 0;
    if (driver.pointer_get_attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                     static_cast<CUdeviceptr>(b.base)) == CUDA_SUCCESS) {
      o.found = true;
      o.buffer_id = id;
    }
    if (b.kind == BufferKind::kDevice) {
      CUdeviceptr base = 0;
      size_t bytes = 0;
      if (driver.mem_get_address_range(&base, &bytes, static_cast<CUdeviceptr>(b.base)) ==
          CUDA_SUCCESS) {
        o.range_base = base;
        o.range_bytes = bytes;
      } else {
        o.found = false;
      }
    }
    out.push_back(o);
  }
  return out;
}

// Whether a node's `func` is the kernel of `kind`: the host stub the node
// was built with, or the driver's handle for it (the CUDA documentation leaves
// open which of the two comes back; both identify the function).
bool is_function_of(KernelKind kind, const void* func) {
  const void* stub = kernel_function(kind);
  if (func == stub) return true;
  cudaFunction_t handle = nullptr;
  if (cudaGetFuncBySymbol(&handle, stub) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return static_cast<const void*>(handle) == func;
}

// A kernel node's function and raw arguments, decoded by the ABI table:
// the function names a family (binary kinds share one), and the kind whose
// table decodes the arguments (op code, constant) is the node's.
Result<std::optional<KernelLaunch>> read_kernel(const Graph& g, std::uint32_t i,
                                                cudaGraphNode_t node) {
  cudaKernelNodeParams kp{};
  CAPSIM_CUDA_TRY(cudaGraphKernelNodeGetParams(node, &kp), "cudaGraphKernelNodeGetParams");
  if (kp.extra != nullptr || kp.kernelParams == nullptr) {
    return make_error(fmt::format(
        "graph '{}': node {} holds its arguments in `extra`; the backend sets kernelParams", g.name,
        i));
  }
  std::string tried;
  for (int k = 0; k < kNumKernelKinds; ++k) {
    const auto kind = static_cast<KernelKind>(k);
    if (!is_function_of(kind, kp.func)) continue;
    const std::size_t n = kernel_abi(kind).params.size();
    // Copied out at once: the arrays belong to the node (cudaGraphKernelNodeGetParams).
    std::vector<const void*> args(kp.kernelParams, kp.kernelParams + n);
    Result<KernelLaunch> launch = decode_params(kind, args);
    if (launch) return std::optional<KernelLaunch>(*launch);
    tried += fmt::format("; {}", launch.error().message);
  }
  return make_error(fmt::format("graph '{}': node {} runs a kernel no table entry decodes{}",
                                g.name, i, tried.empty() ? " (an unknown function)" : tried));
}

// Node i's type and parameters: a kernel's launch, a copy's or a memset's.
Status read_params(const Graph& g, std::uint32_t i, NodeReading& r) {
  cudaGraphNode_t node = g.nodes[i];
  cudaGraphNodeType type{};
  CAPSIM_CUDA_TRY(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
  switch (type) {
    case cudaGraphNodeTypeKernel: {
      r.type = GraphNodeType::kKernel;
      CAPSIM_TRY_ASSIGN(r.kernel, read_kernel(g, i, node));
      break;
    }
    case cudaGraphNodeTypeMemcpy: {
      r.type = GraphNodeType::kMemcpy;
      cudaMemcpy3DParms p{};
      CAPSIM_CUDA_TRY(cudaGraphMemcpyNodeGetParams(node, &p), "cudaGraphMemcpyNodeGetParams");
      if (p.srcArray != nullptr || p.dstArray != nullptr) {
        return make_error(
            fmt::format("graph '{}': node {} copies a CUDA array, never built", g.name, i));
      }
      r.copy.src = reinterpret_cast<std::uint64_t>(p.srcPtr.ptr) + p.srcPos.x;
      r.copy.dst = reinterpret_cast<std::uint64_t>(p.dstPtr.ptr) + p.dstPos.x;
      r.copy.bytes = static_cast<std::uint64_t>(p.extent.width) * p.extent.height * p.extent.depth;
      break;
    }
    case cudaGraphNodeTypeMemset: {
      r.type = GraphNodeType::kMemset;
      cudaMemsetParams p{};
      CAPSIM_CUDA_TRY(cudaGraphMemsetNodeGetParams(node, &p), "cudaGraphMemsetNodeGetParams");
      r.memset.dst = reinterpret_cast<std::uint64_t>(p.dst);
      r.memset.bytes = p.height <= 1 ? static_cast<std::uint64_t>(p.elementSize) * p.width
                                     : static_cast<std::uint64_t>(p.pitch) * (p.height - 1) +
                                           static_cast<std::uint64_t>(p.elementSize) * p.width;
      r.memset.value = static_cast<std::uint8_t>(p.value);
      break;
    }
    default:
      r.type = GraphNodeType::kOther;
      r.other_type = std::string(node_type_name(type));
      break;
  }
  return {};
}

// Node i's dependencies, as our indices of the nodes they name.
Status read_deps(const Graph& g, std::uint32_t i,
                 const std::map<cudaGraphNode_t, std::uint32_t>& index, NodeReading& r) {
  cudaGraphNode_t node = g.nodes[i];
  size_t ndeps = 0;
  CAPSIM_CUDA_TRY(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &ndeps),
                  "cudaGraphNodeGetDependencies");
  std::vector<cudaGraphNode_t> deps(ndeps);
  if (ndeps > 0) {
    CAPSIM_CUDA_TRY(cudaGraphNodeGetDependencies(node, deps.data(), nullptr, &ndeps),
                    "cudaGraphNodeGetDependencies");
  }
  for (cudaGraphNode_t d : deps) {
    auto it = index.find(d);
    if (it == index.end()) {
      return make_error(
          fmt::format("graph '{}': node {} depends on a node the backend never "
                      "built",
                      g.name, i));
    }
    r.deps.push_back(it->second);
  }
  return {};
}

// The template graph as the driver describes it, node i for step i.
Result<std::vector<NodeReading>> read_back(const Graph& g) {
  size_t count = 0;
  CAPSIM_CUDA_TRY(cudaGraphGetNodes(g.graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> all(count);
  if (count > 0) {
    CAPSIM_CUDA_TRY(cudaGraphGetNodes(g.graph, all.data(), &count), "cudaGraphGetNodes");
  }
  // Our own index of each node; the driver's order is not documented.
  std::map<cudaGraphNode_t, std::uint32_t> index;
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) index[g.nodes[i]] = i;
  if (all.size() != g.nodes.size()) {
    return make_error(fmt::format("graph '{}': the driver reports {} nodes, the backend built {}",
                                  g.name, all.size(), g.nodes.size()));
  }
  for (cudaGraphNode_t n : all) {
    if (index.count(n) == 0) {
      return make_error(
          fmt::format("graph '{}': the driver reports a node the backend never "
                      "built",
                      g.name));
    }
  }
  std::vector<NodeReading> out(g.nodes.size());
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    CAPSIM_TRY(read_deps(g, i, index, out[i]));
    CAPSIM_TRY(read_params(g, i, out[i]));
  }
  return out;
}
}  // namespace

struct CudaBackend::Impl {
  Fault fault = Fault::kNone;
  CudaDeviceInfo info;
  int device = 0;
  DriverApi driver;
  cudaStream_t stream = nullptr;
  void* staging = nullptr;  // cudaHostAlloc, registered
  void* guard = nullptr;    // cudaMalloc, never registered: see kGuardBytes
  BufferRegistry registry;
  std::map<Address, void*> segments;  // simulated base -> allocation
  std::vector<Graph> graphs;
  bool params_checked = false;

  ~Impl() {
    // Graphs first: the buffers they bake must outlive them.
    for (Graph& g : graphs) {
      if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
      if (g.graph != nullptr) cudaGraphDestroy(g.graph);
    }
    for (auto& [base, p] : segments) cudaFree(p);
    if (guard != nullptr) cudaFree(guard);
    if (staging != nullptr) cudaFreeHost(staging);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  Status check_guard() const {
    std::vector<unsigned char> now(kGuardBytes);
    CAPSIM_CUDA_TRY(cudaMemcpy(now.data(), guard, kGuardBytes, cudaMemcpyDeviceToHost),
                    "reading the guard");
    for (std::size_t i = 0; i < now.size(); ++i) {
      if (now[i] != kGuardByte) {
        return make_error(fmt::format(
            "cuda: byte {} of the guard allocation, which no graph bakes, is now {:#04x}", i,
            now[i]));
      }
    }
    return {};
  }

  Status check_graph_memory() const {
    unsigned long long used = 0;
    CAPSIM_CUDA_TRY(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &used),
                    "cudaDeviceGetGraphMemAttribute(UsedMemCurrent)");
    if (used != 0) {
      return make_error(fmt::format(
          "cuda: the driver holds {} bytes of graph memory; the backend builds no memory nodes",
          used));
    }
    return {};
  }

  // Each kernel's parameter list against the compiled kernel's, once.
  Status check_params() {
    if (params_checked) return {};
    for (int k = 0; k < kNumKernelKinds; ++k) {
      const auto kind = static_cast<KernelKind>(k);
      const void* fn = kernel_function(kind);
      std::vector<ParamInfo> infos;
      for (std::size_t i = 0; i <= kMaxKernelParams; ++i) {
        size_t offset = 0, size = 0;
        if (cudaFuncGetParamInfo(fn, i, &offset, &size) != cudaSuccess) {
          cudaGetLastError();  // the index past the last parameter fails: clear it
          break;
        }
        infos.push_back({offset, size});
      }
      CAPSIM_TRY(check_param_info(kind, infos));
    }
    params_checked = true;
    return {};
  }

  Result<std::uint64_t> device_address(Address simulated) const {
    return registry.to_device(simulated);
  }

  Status add_node(Graph& g, StepIndex i, std::span<const cudaGraphNode_t> deps) {
    const Step& step = g.program.steps[i];
    cudaGraphNode_t node = nullptr;
    if (const auto* k = std::get_if<KernelLaunch>(&step.op)) {
      const int pointers = signature(k->kind).num_pointers;
      std::vector<std::uint64_t> device_pointers;
      for (int p = 0; p < pointers; ++p) {
        CAPSIM_TRY_ASSIGN(const std::uint64_t d, device_address(k->pointers[p]));
        device_pointers.push_back(d);
      }
      if (fault == Fault::kBakeOutside && pointers > 0 && !baked_outside_) {
        device_pointers[0] = reinterpret_cast<std::uint64_t>(guard);
        baked_outside_ = true;
      }
      ParamBlock block;
      CAPSIM_TRY(encode_params(*k, device_pointers, block));
      const std::int64_t n = grid_size(*k);
      cudaKernelNodeParams kp{};
      kp.func = const_cast<void*>(kernel_function(k->kind));
      // An empty launch still gets one block: the kernel's bound check makes
      // it a no-op, and the node stays the step's (a grid of 0 is invalid).
      const std::int64_t blocks = std::max<std::int64_t>(1, (n + kThreads - 1) / kThreads);
      kp.gridDim = dim3(static_cast<unsigned>(blocks));
      kp.blockDim = dim3(kThreads);
      kp.sharedMemBytes = 0;
      kp.kernelParams = block.args.data();
      kp.extra = nullptr;
      CAPSIM_CUDA_TRY(cudaGraphAddKernelNode(&node, g.graph, deps.data(), deps.size(), &kp),
                      fmt::format("graph '{}' step {}: cudaGraphAddKernelNode", g.name, i));
    } else if (const auto* c = std::get_if<CopyStep>(&step.op)) {
      if (c->bytes == 0) {
        return make_error(
            fmt::format("graph '{}' step {}: a 0-byte copy has no CUDA memcpy node", g.name, i));
      }
      CAPSIM_TRY_ASSIGN(const std::uint64_t dst, device_address(c->dst));
      CAPSIM_TRY_ASSIGN(const std::uint64_t src, device_address(c->src));
      CAPSIM_CUDA_TRY(cudaGraphAddMemcpyNode1D(
                          &node, g.graph, deps.data(), deps.size(), reinterpret_cast<void*>(dst),
                          reinterpret_cast<void*>(src), c->bytes, cudaMemcpyDeviceToDevice),
                      fmt::format("graph '{}' step {}: cudaGraphAddMemcpyNode1D", g.name, i));
    } else {
      const auto& m = std::get<MemsetStep>(step.op);
      if (m.bytes == 0) {
        return make_error(
            fmt::format("graph '{}' step {}: a 0-byte memset has no CUDA memset node", g.name, i));
      }
      CAPSIM_TRY_ASSIGN(const std::uint64_t dst, device_address(m.dst));
      cudaMemsetParams mp{};
      mp.dst = reinterpret_cast<void*>(dst);
      mp.pitch = 0;
      mp.value = m.value;
      mp.elementSize = 1;
      mp.width = m.bytes;
      mp.height = 1;
      CAPSIM_CUDA_TRY(cudaGraphAddMemsetNode(&node, g.graph, deps.data(), deps.size(), &mp),
                      fmt::format("graph '{}' step {}: cudaGraphAddMemsetNode", g.name, i));
    }
    g.nodes.push_back(node);
    return {};
  }

  Result<std::vector<BakedRange>> verify(const Graph& g) const {
    CAPSIM_TRY_ASSIGN(const std::vector<NodeReading> nodes, read_back(g));
    return verify_mirror(g.program, nodes, registry);
  }

  Result<const Graph*> graph(GraphHandle h) const {
    if (h.value >= graphs.size()) {
      return make_error(fmt::format("cuda backend: unknown graph handle {}", h.value));
    }
    return &graphs[h.value];
  }

  bool baked_outside_ = false;
};

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(Fault fault) {
  CAPSIM_CHECK_FAULT_SITE(fault, FaultSite::kCuda);
  auto impl = std::make_unique<Impl>();
  impl->fault = fault;
  int count = 0;
  CAPSIM_CUDA_TRY(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count == 0) return make_error("cuda: no CUDA device");
  CAPSIM_CUDA_TRY(cudaSetDevice(0), "cudaSetDevice(0)");
  cudaDeviceProp prop{};
  CAPSIM_CUDA_TRY(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  impl->info.name = prop.name;
  impl->info.compute_major = prop.major;
  impl->info.compute_minor = prop.minor;
  CAPSIM_CUDA_TRY(cudaDriverGetVersion(&impl->info.driver_version), "cudaDriverGetVersion");
  CAPSIM_CUDA_TRY(cudaRuntimeGetVersion(&impl->info.runtime_version), "cudaRuntimeGetVersion");
  // By version 12.0: the newest ABI of each symbol at 12.0 (cuMemGetAddressRange
  // is then its _v2), matching the PFN typedefs used here.
  CAPSIM_TRY(entry_point("cuPointerGetAttribute", 12000, impl->driver.pointer_get_attribute));
  CAPSIM_TRY(entry_point("cuMemGetAddressRange", 12000, impl->driver.mem_get_address_range));
  CAPSIM_CUDA_TRY(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags");
  CAPSIM_CUDA_TRY(cudaHostAlloc(&impl->staging, kStagingBytes, cudaHostAllocDefault),
                  "cudaHostAlloc(staging)");
  CAPSIM_TRY_ASSIGN(const std::uint64_t staging_id, buffer_id(impl->driver, impl->staging));
  CAPSIM_TRY(impl->registry.add({"staging", BufferKind::kPinnedHost,
                                 reinterpret_cast<std::uint64_t>(impl->staging), kStagingBytes,
                                 staging_id, std::nullopt}));
  CAPSIM_CUDA_TRY(cudaMalloc(&impl->guard, kGuardBytes), "cudaMalloc(guard)");
  CAPSIM_CUDA_TRY(cudaMemset(impl->guard, kGuardByte, kGuardBytes), "cudaMemset(guard)");
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(impl)));
}

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaBackend::~CudaBackend() = default;

const CudaDeviceInfo& CudaBackend::device() const {
  return impl_->info;
}

std::string CudaBackend::describe() const {
  const CudaDeviceInfo& d = impl_->info;
  return fmt::format("{} (sm_{}{}), driver {}.{}, runtime {}.{}", d.name, d.compute_major,
                     d.compute_minor, d.driver_version / 1000, d.driver_version % 1000 / 10,
                     d.runtime_version / 1000, d.runtime_version % 1000 / 10);
}

Status CudaBackend::materialize(const MemoryLayout& layout) {
  Impl& m = *impl_;
  for (const AddressRange& segment : layout.segments) {
    if (m.segments.count(segment.base) != 0) continue;
    void* p = nullptr;
    CAPSIM_CUDA_TRY(
        cudaMalloc(&p, segment.bytes),
        fmt::format("cudaMalloc({} bytes for segment {})", segment.bytes, hex(segment.base)));
    m.segments[segment.base] = p;
    CAPSIM_CUDA_TRY(cudaMemset(p, 0, segment.bytes), "cudaMemset(segment)");
    CAPSIM_TRY_ASSIGN(const std::uint64_t id, buffer_id(m.driver, p));
    CAPSIM_TRY(
        m.registry.add({fmt::format("segment {}", hex(segment.base)), BufferKind::kDevice,
                        reinterpret_cast<std::uint64_t>(p), segment.bytes, id, segment.base}));
  }
  return {};
}

Result<GraphHandle> CudaBackend::instantiate(const StepProgram& program) {
  Impl& m = *impl_;
  CAPSIM_TRY(validate(program));
  if (m.graphs.size() >= kMaxCudaGraphs) {
    return make_error(fmt::format("cuda backend: more than {} graphs", kMaxCudaGraphs));
  }
  CAPSIM_TRY(m.check_params());
  m.graphs.emplace_back();
  Graph& g = m.graphs.back();
  g.name = program.name;
  g.program = program;
  CAPSIM_CUDA_TRY(cudaGraphCreate(&g.graph, 0), "cudaGraphCreate");
  for (StepIndex i = 0; i < program.steps.size(); ++i) {
    std::vector<cudaGraphNode_t> deps;
    for (StepIndex d : program.steps[i].deps) deps.push_back(g.nodes[d]);
    CAPSIM_TRY(m.add_node(g, i, deps));
  }
  cudaGraphInstantiateParams ip{};
  ip.flags = 0;  // no AutoFreeOnLaunch: there are no memory nodes to free
  CAPSIM_CUDA_TRY(cudaGraphInstantiateWithParams(&g.exec, g.graph, &ip),
                  fmt::format("graph '{}': cudaGraphInstantiateWithParams", g.name));
  // Refuse to run a graph that is not exactly its program.
  CAPSIM_TRY_ASSIGN(g.baseline, m.verify(g));
  g.uses = pointer_uses(program);
  // verify_mirror reads one range per pointer use, in the same order; an
  // error rather than an abort, so that a check run reports it.
  for (std::size_t k = 0; k < std::max(g.uses.size(), g.baseline.size()); ++k) {
    if (k >= g.uses.size() || k >= g.baseline.size() || g.uses[k].step != g.baseline[k].step ||
        g.uses[k].arg != g.baseline[k].arg) {
      return make_error(
          fmt::format("graph '{}': the driver's reading has {} baked ranges, the "
                      "program {} pointer uses; they part at {}",
                      g.name, g.baseline.size(), g.uses.size(), k));
    }
  }
  CAPSIM_TRY(m.check_graph_memory());
  return GraphHandle{static_cast<std::uint32_t>(m.graphs.size() - 1)};
}

Status CudaBackend::replay(GraphHandle handle) {
  Impl& m = *impl_;
  CAPSIM_TRY_ASSIGN(const Graph* g, m.graph(handle));
  CAPSIM_CUDA_TRY(cudaGraphLaunch(g->exec, m.stream),
                  fmt::format("graph '{}': cudaGraphLaunch", g->name));
  CAPSIM_CUDA_TRY(cudaStreamSynchronize(m.stream),
                  fmt::format("graph '{}': cudaStreamSynchronize after the replay", g->name));
  // Everything the graph baked is still what it was, read from the driver.
  CAPSIM_TRY(m.registry.check_unchanged(observe(m.driver, m.registry)));
  CAPSIM_TRY_ASSIGN(const std::vector<BakedRange> now, m.verify(*g));
  CAPSIM_TRY(check_same_baked(g->baseline, now));
  CAPSIM_TRY(m.check_guard());
  return m.check_graph_memory();
}

Status CudaBackend::read(Address address, std::span<std::byte> out) {
  Impl& m = *impl_;
  if (out.empty()) return {};
  CAPSIM_TRY_ASSIGN(const std::uint64_t device, m.registry.to_device(address));
  CAPSIM_TRY(m.registry.locate(device, out.size()));
  for (std::size_t done = 0; done < out.size();) {
    const std::size_t chunk = std::min(out.size() - done, kStagingBytes);
    CAPSIM_CUDA_TRY(cudaMemcpy(m.staging, reinterpret_cast<const void*>(device + done), chunk,
                               cudaMemcpyDeviceToHost),
                    fmt::format("reading {}", hex(address + done)));
    std::memcpy(out.data() + done, m.staging, chunk);
    done += chunk;
  }
  return {};
}

Status CudaBackend::write(Address address, std::span<const std::byte> in) {
  Impl& m = *impl_;
  if (in.empty()) return {};
  CAPSIM_TRY_ASSIGN(const std::uint64_t device, m.registry.to_device(address));
  CAPSIM_TRY(m.registry.locate(device, in.size()));
  for (std::size_t done = 0; done < in.size();) {
    const std::size_t chunk = std::min(in.size() - done, kStagingBytes);
    std::memcpy(m.staging, in.data() + done, chunk);
    CAPSIM_CUDA_TRY(cudaMemcpy(reinterpret_cast<void*>(device + done), m.staging, chunk,
                               cudaMemcpyHostToDevice),
                    fmt::format("writing {}", hex(address + done)));
    done += chunk;
  }
  return {};
}

Result<std::vector<PointerUse>> CudaBackend::baked_pointers(GraphHandle handle) const {
  const Impl& m = *impl_;
  CAPSIM_TRY_ASSIGN(const Graph* g, m.graph(handle));
  // The ranges read back from the driver, as simulated addresses; the access
  // (which the driver does not know) is the program's.
  std::vector<PointerUse> out;
  for (std::size_t k = 0; k < g->baseline.size(); ++k) {
    const BakedRange& b = g->baseline[k];
    const PointerUse& use = g->uses[k];  // same step and argument: instantiate checked
    CAPSIM_TRY_ASSIGN(const Address simulated, m.registry.to_simulated(b.address));
    out.push_back({b.step, b.arg, AddressRange{simulated, b.bytes}, use.access});
  }
  return out;
}

Result<std::vector<std::uint64_t>> CudaBackend::buffer_ids(GraphHandle handle) const {
  const Impl& m = *impl_;
  CAPSIM_TRY_ASSIGN(const Graph* g, m.graph(handle));
  std::vector<std::uint64_t> ids;
  for (const BakedRange& b : g->baseline) {
    const std::uint64_t id = m.registry.buffers()[b.buffer].buffer_id;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

Status CudaBackend::free_and_reallocate(Address segment_base) {
  Impl& m = *impl_;
  auto it = m.segments.find(segment_base);
  if (it == m.segments.end()) {
    return make_error(fmt::format("cuda backend: no segment at {}", hex(segment_base)));
  }
  CAPSIM_TRY_ASSIGN(const std::size_t index,
                    m.registry.locate(reinterpret_cast<std::uint64_t>(it->second), 1));
  const std::uint64_t bytes = m.registry.buffers()[index].bytes;
  std::vector<std::byte> keep(bytes);
  CAPSIM_TRY(read(segment_base, keep));
  CAPSIM_CUDA_TRY(cudaFree(it->second), "cudaFree(segment)");
  void* p = nullptr;
  CAPSIM_CUDA_TRY(cudaMalloc(&p, bytes), "cudaMalloc(segment again)");
  it->second = p;
  CAPSIM_CUDA_TRY(cudaMemcpy(p, keep.data(), bytes, cudaMemcpyHostToDevice), "restoring bytes");
  // The registry keeps the old identity on purpose: that is what the next
  // replay's check compares with.
  return {};
}

}  // namespace capsim::cuda
