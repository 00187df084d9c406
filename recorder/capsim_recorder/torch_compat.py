"""Every private PyTorch entry point the recorder touches, in one place.

The recorder reads and patches PyTorch internals: `torch._dynamo`,
`torch._inductor`, `torch._functorch`, the cudagraph-tree manager's methods,
arguments it reads by position. A release that renames one of them would
leave a trace silently incomplete, so:

- no other module of the package names a `torch._*` attribute or imports
  from a private torch module (tests/test_package_limits.py checks it); each
  entry point has a small accessor here, imported lazily so that this module
  imports without torch;
- ENTRY_POINTS says, per entry point, what the recorder takes from it, which
  recordings need it (`needed_by`) and from which release on PyTorch has it
  (`since`; the per-release gates);
- `self_check(needs)` resolves each gated-in entry point of a recording on
  the running release and returns one line per missing one; `announce()`
  prints each line on stderr at the start of every recording and hands them
  to the trace's `x_notes`.

Names as in PyTorch 2.11 (torch/_inductor/cudagraph_trees.py,
compile_fx.py, ...); the corpus records 2.8.0, 2.11.0 and 2.15.0.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

# Which recordings need an entry point (`needed_by`):
AUTOGRAD = "autograd"  # compiled autograd on the CPU (recorder.py, capture.py, graph_walk.py)
OPTIMIZER = "optimizer"  # the compiled optimizer (optimizer/, launcher/optimizer.py)
CUDAGRAPHS = "cudagraphs"  # the cudagraph trees (cudagraph/)
LAUNCHER = "launcher"  # record()'s wraps of the plain API (recording.py, launcher/)
READS = "reads"  # record(cudagraphs=True)'s reads of compiled outputs (launcher/reads.py)
PROGRAMS = "programs"  # the corpus's own programs (programs.py)

# The tree manager's methods the observer replaces (cudagraph/observer.py),
# and the node's; looked up in the class's own __dict__ (an inherited one
# would be patched on the wrong class).
MANAGER_CLASS = "torch._inductor.cudagraph_trees.CUDAGraphTreeManager"
NODE_CLASS = "torch._inductor.cudagraph_trees.CUDAGraphNode"
MANAGER_METHODS = (
    "add_function",
    "run",
    "run_eager",
    "record_function",
    "execute_node",
    "try_end_curr_recording",
    "try_end_curr_warmup",
    "try_end_curr_execution",
    "apply_checkpoint_execution_state_in_allocator",
    "check_warn_on_unable_to_start_executing",
    "_update_non_cudagraph_managed_mutation",
    "set_to_running_backward",
)
NODE_METHODS = ("check_invariants", "check_static_inputs_are_stable")
# The manager's methods that came later, with the release that brought each:
# patched only where the class has one (an older release lacks it, and its
# tree manager never does what it observes). 2.15: the demotion of a
# cudagraph-managed input whose pointer keeps changing (the `demote` event).
LATER_MANAGER_METHODS = (("_update_cudagraph_managed_input_rerecord", "2.15"),)
# What that method adds to: {parent GraphID or None: {FunctionID: indices}}.
DEMOTED_MANAGED_IDXS = "demoted_cudagraph_managed_idxs"
# The modules of PyTorch's cudagraph code: an exception raised through one of
# them is a cudagraph trace's `error` event (launcher/failures.py).
CUDAGRAPH_MODULES = ("torch._inductor.cudagraph_trees", "torch._inductor.cudagraph_utils")
# The skip logger, patched in cudagraph_utils and in every torch._inductor
# module that imported it by name.
SKIP_LOG = "log_cudagraph_skip_and_bump_counter"
SKIP_LOG_PACKAGE = "torch._inductor"
# Inductor's compile entry points the compile hooks replace (cudagraph/hooks.py).
COMPILE_FX = "torch._inductor.compile_fx"
COMPILE_FX_INNER = "_compile_fx_inner"
CUDAGRAPHIFY = "cudagraphify"
# Read by position: add_function(self, model, inputs, static_input_idxs, stack_traces,
# mode, ...), wrapped as (mgr, model, inputs, static_input_idxs, *rest): mode is rest[1].
ADD_FUNCTION_MODE = (5, "mode")  # (position counting self, name)
ADD_FUNCTION_REST_MODE = ADD_FUNCTION_MODE[0] - 4
# compiled autograd's verbose artifact logger (capture.py).
CA_VERBOSE_LOGGER = "torch._dynamo.compiled_autograd.__compiled_autograd_verbose"
# A codegen'd node's saved fields (graph_walk.py, node_fields.py), and the
# SavedVariable behind one (its unpack_hook tells saved-tensor hooks, 2.11 on).
SAVED_PREFIX = "_saved_"
RAW_SAVED_PREFIX = "_raw_saved_"
# Modules between an op's caller and __torch_dispatch__ (2.11 wraps it in
# torch._dynamo.disable: eval_frame's and _compile's frames), and the
# modules of PyTorch's own machinery, whose ops are not a script's reads
# (launcher/reads.py).
DISPATCH_MACHINERY = ("torch._ops", "torch.utils._python_dispatch", "torch.utils._pytree",
                      "torch._dynamo.eval_frame", "torch._compile")
TORCH_INTERNALS = ("torch._functorch", "torch._dynamo", "torch._inductor", "torch.autograd",
                   "torch.optim", "torch._subclasses", "torch.fx", "torch._decomp", "torch._refs",
                   "torch._prims", "torch._prims_common", "torch._higher_order_ops",
                   "torch.utils.checkpoint", "torch._library", "torch.cuda")


@dataclass(frozen=True)
class EntryPoint:
    """One private name: `path` is module.attribute[.attribute]."""

    path: str
    takes: str  # what the recorder takes from it
    needed_by: tuple
    since: str = "2.8"  # the first release that has it (older: not expected)
    own: bool = False  # must be in the class's own __dict__ (a patched method)
    param: Optional[tuple] = None  # (position, name) of an argument read by position


def _entries() -> list:
    ag, opt, cg, la, rd = (AUTOGRAD,), (OPTIMIZER,), (CUDAGRAPHS,), (LAUNCHER,), (READS,)
    d, ind, fn = "torch._dynamo", "torch._inductor", "torch._functorch"
    out = [
        EntryPoint(f"{d}.compiled_autograd._enable", "compiled autograd around a backward", ag),
        EntryPoint(f"{d}.compiled_autograd.compiled_autograd_enabled", "whether it is on", ag),
        EntryPoint(f"{d}.compiled_autograd.extract_bw_module", "an AOT region's backward graph", ag),
        EntryPoint(f"{fn}._aot_autograd.schemas.SubclassCreationMeta", "an AOT region's epilogue", ag),
        EntryPoint(f"{d}.utils.counters", "compiled autograd's captures; a clean slate",
                   ag + opt + cg + la),
        EntryPoint("torch._logging.set_logs", "the cache-miss text (compiled_autograd_verbose)", ag),
        EntryPoint("torch.fx.node._get_qualified_name", "graph targets' names", ag + cg),
        EntryPoint("torch._C._functions", "which nodes are codegen'd", ag),
        EntryPoint("torch.utils._python_dispatch.is_traceable_wrapper_subclass",
                   "tensor subclasses (TwoTensor)", ag),
        EntryPoint(f"{d}.config.inline_inbuilt_nn_modules", "the header's config", ag + opt + cg + la),
        EntryPoint(f"{ind}.config.triton", "the header's cudagraph settings", ag + opt + cg + la),
        EntryPoint(f"{ind}.config.fx_graph_cache", "off: every compile reaches the hooks", opt + cg + la),
        EntryPoint(f"{fn}.config.enable_autograd_cache", "off: every compile reaches the hooks",
                   opt + cg + la),
        EntryPoint(f"{ind}.output_code.CompiledFxGraph.post_compile",
                   "the compiled optimizer's static inputs and calls", opt + la, own=True),
        EntryPoint(f"{d}.utils.guard_failures", "a recompiled step's failed guard", opt + la),
        EntryPoint(f"{d}.utils.get_static_address_type", "what Dynamo marked static", opt + la),
        EntryPoint(f"{d}.mark_static_address", "mark_static (and its `guard` default)",
                   opt + cg + la, param=(1, "guard")),
        EntryPoint(f"{ind}.compile_fx.{COMPILE_FX_INNER}", "each graph Inductor compiles", cg),
        EntryPoint(f"{ind}.compile_fx.{CUDAGRAPHIFY}", "each callable handed to the trees", cg),
        EntryPoint("torch._ops.OpOverload", "aten targets' names", cg),
        EntryPoint("torch._ops.OpOverloadPacket", "aten targets' names", cg),
        EntryPoint(f"{ind}.cudagraph_utils.{SKIP_LOG}", "skip messages", cg),
        EntryPoint(f"{ind}.cudagraph_trees.get_block_addrs", "pool blocks around a checkpoint", cg),
        EntryPoint(f"{MANAGER_CLASS}.format_dealloc_msg", "the E1 text's fixed part", cg),
        EntryPoint(f"{MANAGER_CLASS}._get_node_id", "the eager reason (mutated inputs)", cg),
        EntryPoint(f"{d}.mutation_guard.GenerationTracker.generation", "new torch.compile invocations",
                   cg),
        EntryPoint("torch.multiprocessing.reductions.StorageWeakRef", "when a named tensor dies", cg),
        EntryPoint("torch.utils._python_dispatch.TorchDispatchMode.ignore_compile_internals",
                   "reads of compiled outputs", rd, since="2.11"),
        EntryPoint("torch.utils._python_dispatch._get_current_dispatch_mode",
                   "taking the read watch off", rd),
        EntryPoint("torch.utils._pytree.tree_leaves", "an op's tensor arguments", rd),
        EntryPoint("torch.overrides._get_current_function_mode_stack",
                   "taking the operand watch off (operands.py)", ag + la),
        EntryPoint(f"{d}.eval_frame.skip_code",
                   "the operand watch's own frames left uncompiled (operands.py)", ag + la),
        EntryPoint("torch.utils._python_dispatch.get_alias_info",
                   "a generic op's views and writes (its schema's alias sets)", cg),
        EntryPoint("torch.fx.experimental.sym_node.SymNode.hint", "a symbolic size's hint", cg),
        EntryPoint("torch.testing._internal.two_tensor.TwoTensor", "the TwoTensor program",
                   (PROGRAMS,)),
    ]
    out += [EntryPoint(f"{MANAGER_CLASS}.{m}", "the tree manager's decisions", cg, own=True,
                       param=ADD_FUNCTION_MODE if m == "add_function" else None)
            for m in MANAGER_METHODS]
    out += [EntryPoint(f"{MANAGER_CLASS}.{m}", "the demotion of a managed input (demote)", cg, since=since,
                       own=True) for m, since in LATER_MANAGER_METHODS]
    out += [EntryPoint(f"{NODE_CLASS}.{m}", "the node's checks", cg, own=True) for m in NODE_METHODS]
    return out


ENTRY_POINTS: tuple = tuple(_entries())


# -- the gates and the self-check -------------------------------------------------


def release_tuple(version: str) -> tuple:
    """"2.11.0+cu130" -> (2, 11, 0); "2.12.0a0" -> (2, 12, 0)."""
    out = [int(re.match(r"\d*", piece).group() or 0) for piece in version.split("+")[0].split(".")[:3]]
    return tuple(out + [0] * (3 - len(out)))


def expected(entry: EntryPoint, version: str) -> bool:
    """Whether this release should have `entry` (its gate)."""
    return release_tuple(version) >= release_tuple(entry.since)


def resolve(path: str) -> Any:
    """The object at a dotted path: the longest importable module, then
    attributes. Raises (ImportError, AttributeError) when it is missing."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            obj = sys.modules.get(name) or importlib.import_module(name)
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def _problem(entry: EntryPoint) -> Optional[str]:
    """Why `entry` does not serve on this release, or None."""
    try:
        if entry.own:
            owner_path, name = entry.path.rsplit(".", 1)
            owner = resolve(owner_path)
            if name not in vars(owner):
                return "missing"
            obj = vars(owner)[name]
        else:
            obj = resolve(entry.path)
    except Exception as e:  # any failure to find it is the finding
        return f"missing ({type(e).__name__})"
    if entry.param is not None:
        position, name = entry.param
        try:
            params = list(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            return None  # (no signature to read: not checked)
        if position >= len(params) or params[position] != name:
            return f"argument {position} is {params[position] if position < len(params) else 'absent'}, not {name}"
    return None


def self_check(needs: Sequence[str], version: Optional[str] = None) -> list:
    """One line per entry point a recording needing `needs` cannot use on
    this release (missing, or an argument read by position moved); entry
    points gated out for this release are not expected and not listed."""
    if version is None:
        import torch

        version = torch.__version__
    lines = []
    for entry in ENTRY_POINTS:
        if not set(entry.needed_by) & set(needs) or not expected(entry, version):
            continue
        problem = _problem(entry)
        if problem is not None:
            lines.append(f"torch {version.split('+')[0]} lacks {entry.path}: {problem}"
                         f" (for {entry.takes}; the trace may be incomplete)")
    return lines


def announce(needs: Sequence[str], log: Optional[Callable[[str], None]] = None) -> list:
    """self_check(needs), each line said loudly on stderr; returns the lines
    for the trace's x_notes."""
    lines = self_check(needs)
    for line in lines:
        if log is not None:
            log(line)
        else:
            print(f"capsim_recorder: WARNING: {line}", file=sys.stderr, flush=True)
    return lines


# -- compiled autograd (capture.py, graph_walk.py, aot_body.py; wraps.py's _enable) --


def compiled_autograd_module() -> Any:
    from torch._dynamo import compiled_autograd
    return compiled_autograd


def compiled_autograd_enable(compiler_fn: Any, dynamic: bool) -> Any:
    return compiled_autograd_module()._enable(compiler_fn, dynamic=dynamic)


def compiled_autograd_enabled() -> bool:
    return bool(compiled_autograd_module().compiled_autograd_enabled)


def extract_bw_module(compiled: Any) -> Any:
    from torch._dynamo.compiled_autograd import extract_bw_module as extract

    return extract(compiled)


def subclass_creation_meta() -> type:
    from torch._functorch._aot_autograd.schemas import SubclassCreationMeta

    return SubclassCreationMeta


def counters() -> Any:
    """Dynamo's counters (compiled autograd's `captures`)."""
    from torch._dynamo.utils import counters as dynamo_counters

    return dynamo_counters


def set_logs(**settings: Any) -> None:
    import torch._logging

    torch._logging.set_logs(**settings)


def qualified_name(target: Any) -> str:
    from torch.fx.node import _get_qualified_name

    return _get_qualified_name(target)


def is_op_overload(target: Any) -> bool:
    import torch._ops

    return isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))


def codegen_node_class(name: str) -> Any:
    """The class torch._C._functions binds under `name` (codegen'd nodes), or None."""
    import torch

    return getattr(torch._C._functions, name, None)


def is_traceable_wrapper_subclass(t: Any) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass as check

    return check(t)


def input_metadata(node: Any) -> Any:
    """A node's InputMetadata list (shape, dtype, device per input)."""
    return node._input_metadata


def forward_cls(node: Any) -> Any:
    """A CompiledFunctionBackward's CompiledFunction."""
    return node._forward_cls


def compiled_autograd_symints(node: Any) -> Any:
    return node._get_compiled_autograd_symints()


def tensor_version(t: Any) -> int:
    """The tensor's version counter (bumped by each in-place change)."""
    return t._version


def two_tensor() -> type:
    from torch.testing._internal.two_tensor import TwoTensor

    return TwoTensor


# -- configuration ------------------------------------------------------------------------


def dynamo_config() -> Any:
    import torch._dynamo.config as config

    return config


def inductor_config() -> Any:
    import torch._inductor.config as config

    return config


def functorch_config() -> Any:
    import torch._functorch.config as config

    return config


def fresh_compile_patches(program_config: Optional[dict] = None) -> contextlib.ExitStack:
    """Fresh compiles every run: no FX graph cache or AOTAutograd cache hit
    may skip the compile hooks (a cache hit of the latter bypasses Inductor's
    compile entirely). Plus a program's own Inductor settings."""
    inductor, functorch = inductor_config(), functorch_config()
    stack = contextlib.ExitStack()
    stack.enter_context(inductor.patch({"fx_graph_cache": False}))
    if program_config:
        stack.enter_context(inductor.patch(dict(program_config)))
    if hasattr(functorch, "enable_autograd_cache"):
        stack.enter_context(functorch.patch({"enable_autograd_cache": False}))
    return stack


def cache_off_settings() -> list:
    """(owner, key, value): the same two caches off, for code that sets them
    by hand (optimizer/recorder.py's inductor_hooks)."""
    return [(inductor_config(), "fx_graph_cache", False),
            (functorch_config(), "enable_autograd_cache", False)]


# -- Dynamo --------------------------------------------------------------------------------


def dynamo_module() -> Any:
    """torch._dynamo, for patching its mark_static_address."""
    import torch._dynamo

    return torch._dynamo


MARK_STATIC_ADDRESS = "mark_static_address"


def mark_static_address(t: Any, guard: Any = None) -> None:
    """torch._dynamo.mark_static_address, looked up at call time (so that a
    recording's wrap of it sees the call); `guard` None: the release's default."""
    fn = getattr(dynamo_module(), MARK_STATIC_ADDRESS)
    if guard is None:
        fn(t)
    else:
        fn(t, guard=guard)


def guard_failures() -> Any:
    from torch._dynamo.utils import guard_failures as failures

    return failures


def static_address_type(t: Any) -> Any:
    from torch._dynamo.utils import get_static_address_type

    return get_static_address_type(t)


def dynamo_generation() -> Optional[int]:
    """GenerationTracker.generation (moves when Dynamo enters a compiled
    frame), or None."""
    try:
        from torch._dynamo.mutation_guard import GenerationTracker

        return int(GenerationTracker.generation)
    except Exception:
        return None


# -- Inductor and the cudagraph trees --------------------------------------------------


def compile_fx_module() -> Any:
    from torch._inductor import compile_fx

    return compile_fx


def compiled_fx_graph() -> type:
    from torch._inductor.output_code import CompiledFxGraph

    return CompiledFxGraph


def tree_classes() -> tuple:
    """(CUDAGraphTreeManager, CUDAGraphNode)."""
    from torch._inductor import cudagraph_trees

    return cudagraph_trees.CUDAGraphTreeManager, cudagraph_trees.CUDAGraphNode


def add_function_mode(rest: Sequence[Any], kwargs: dict) -> Any:
    """add_function's `mode`, from the arguments after static_input_idxs."""
    if len(rest) > ADD_FUNCTION_REST_MODE:
        return rest[ADD_FUNCTION_REST_MODE]
    return kwargs.get(ADD_FUNCTION_MODE[1])


def skip_log_modules() -> list:
    """The torch._inductor modules that hold log_cudagraph_skip_and_bump_counter
    (each imported it by name, so each binding is patched)."""
    mods = []
    for name, mod in list(sys.modules.items()):
        if name.startswith(SKIP_LOG_PACKAGE) and mod is not None:
            if getattr(mod, SKIP_LOG, None) is not None:
                mods.append(mod)
    return mods


def block_counter() -> Optional[Callable[[Any], Optional[int]]]:
    """Live blocks in a manager's pool (get_block_addrs), or None."""
    from torch._inductor import cudagraph_trees

    get_block_addrs = getattr(cudagraph_trees, "get_block_addrs", None)
    if get_block_addrs is None:
        return None

    def count(mgr: Any) -> Optional[int]:
        return len(get_block_addrs(mgr.cuda_graphs_thread_pool, live_only=True))

    return count


def dealloc_prefix(manager_cls: Any) -> Optional[str]:
    """The part of PyTorch's E1 text before the stack trace, taken from
    PyTorch itself at run time (two renderings, their common prefix)."""
    fmt = getattr(manager_cls, "format_dealloc_msg", None)
    if fmt is None:
        return None
    try:
        a, b = fmt(None), fmt("capsim-sentinel")
    except Exception:
        return None
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    prefix = a[:n].strip()
    return prefix if len(prefix) >= 16 else None


def mutation_hints(mgr: Any) -> dict:
    """The manager's per-node record of functions that mutated inputs."""
    node_id = mgr._get_node_id()
    return mgr.non_cudagraph_managed_mutation_hint.get(node_id, {})


def demoted_managed_idxs(mgr: Any) -> dict:
    """{(parent GraphID or None, FunctionID): set of input indices} the
    manager has demoted from cudagraph-managed to copied (2.15 on; empty
    before)."""
    out: dict = {}
    for node_id, per_function in dict(getattr(mgr, DEMOTED_MANAGED_IDXS, None) or {}).items():
        for function_id, idxs in dict(per_function).items():
            out[(node_id, function_id)] = set(idxs)
    return out


def storage_weak_ref(t: Any) -> Any:
    """A weak reference to t's storage (the tree manager's own kind), or None."""
    try:
        from torch.multiprocessing.reductions import StorageWeakRef

        return StorageWeakRef(t.untyped_storage())
    except Exception:
        return None


# -- the dispatch mode of reads (launcher/reads.py) -------------------------------------


def dispatch_mode_class() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


def reads_supported() -> bool:
    """Whether a mode can watch without changing what Dynamo compiles."""
    return hasattr(dispatch_mode_class(), "ignore_compile_internals")


def current_dispatch_mode() -> Any:
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    return _get_current_dispatch_mode()


def current_function_mode() -> Any:
    """The TorchFunctionMode on top of the stack, or None (operands.py)."""
    from torch.overrides import _get_current_function_mode_stack

    stack = _get_current_function_mode_stack()
    return stack[-1] if stack else None


def dynamo_skip_code(code: Any) -> None:
    """Dynamo leaves frames of `code` uncompiled when they run eagerly (the
    frames they call are compiled as ever); tracing still inlines the code."""
    from torch._dynamo.eval_frame import skip_code

    skip_code(code)


def tree_leaves(tree: Any) -> list:
    from torch.utils._pytree import tree_leaves as leaves

    return leaves(tree)


# -- op schemas and symbolic sizes (generic_op.py) ---------------------------------------


def op_schema(target: Any) -> Any:
    """An OpOverload's FunctionSchema (`_schema`), or None for anything else."""
    if not is_op_overload(target) or not hasattr(target, "overloadpacket"):
        return None
    return getattr(target, "_schema", None)


def _schema_alias_info(schema: Any) -> tuple:
    args = {a.name: (set(a.alias_info.before_set) if a.alias_info else set(),
                     bool(a.alias_info and a.alias_info.is_write)) for a in schema.arguments}
    outs = [(set(r.alias_info.before_set) if r.alias_info else set(),
             bool(r.alias_info and r.alias_info.is_write)) for r in schema.returns]
    return args, outs


def op_alias_info(target: Any) -> Optional[tuple]:
    """({argument name: (alias set, is_write)}, [(alias set, is_write) per
    return]) of an OpOverload, None for anything else. PyTorch's own reading
    (get_alias_info: torchgen's parser for aten ops, which sees a list
    element's alias set, `Tensor(a)[]`), else the schema's alias_info."""
    schema = op_schema(target)
    if schema is None:
        return None
    try:
        from torch.utils._python_dispatch import get_alias_info

        info = get_alias_info(target)
        args = {a.name: (set(a.alias_set), bool(a.is_write)) for a in info.args}
        outs = [(set(o.alias_set), bool(o.is_write)) for o in info.outs]
        if len(outs) == len(schema.returns):
            return args, outs
    except Exception:  # a schema torchgen does not parse: the schema's own
        pass
    return _schema_alias_info(schema)


def op_returns_nothing(target: Any) -> bool:
    schema = op_schema(target)
    return schema is not None and len(schema.returns) == 0


def size_hint(x: Any) -> Any:
    """A SymInt's (SymFloat's, SymBool's) value in the example inputs (its
    hint), or None for one without (unbacked). 2.15 computes some hints
    lazily: then its optimization_hint (hint_int before)."""
    node = getattr(x, "node", None)
    hint = getattr(node, "hint", None) if node is not None else None
    if hint is not None:
        return hint
    try:
        from torch.fx.experimental import symbolic_shapes
    except ImportError:  # pragma: no cover
        return None
    for name in ("optimization_hint", "hint_int"):
        fn = getattr(symbolic_shapes, name, None)
        if fn is None:
            continue
        try:
            return int(fn(x))
        except Exception:
            return None
    return None
