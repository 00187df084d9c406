"""A stand-in for torch/_inductor/cudagraph_trees.py, for tests without a GPU.

It has the attribute and method names the recorder's observer wraps, and a
much simplified version of the manager's decisions (warm up once, record,
replay when the static pointers match, re-record when they do not), written
for these tests. Its tensors are FakeTensor objects (a pointer, sizes,
strides), so the tests run without torch.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import warnings
from collections import defaultdict


class FakeTensor:
    """What the observer reads of a tensor."""

    def __init__(self, ptr, sizes, strides=None, itemsize=4):
        self.ptr = ptr
        self.sizes = tuple(sizes)
        if strides is None:
            strides, acc = [], 1
            for s in reversed(self.sizes):
                strides.insert(0, acc)
                acc *= s
        self.strides = tuple(strides)
        self.itemsize = itemsize
        self.dtype = "float32"
        self.poisoned = False

    def data_ptr(self):
        if self.poisoned:
            raise RuntimeError("poisoned")
        return self.ptr

    def size(self):
        return self.sizes

    @property
    def shape(self):
        return self.sizes

    def stride(self):
        return self.strides

    def element_size(self):
        return self.itemsize

    def numel(self):
        n = 1
        for s in self.sizes:
            n *= s
        return n


@dataclasses.dataclass(frozen=True)
class FunctionID:
    id: int


@dataclasses.dataclass(frozen=True)
class GraphID:
    id: int


class CheckInvariantStatus(enum.Enum):
    SUCCESS = 1
    CudagraphManagedIdxMismatch = 2
    StaticInputIdxMismatch = 3
    ExpectedDeadIndicesBeforeGraphMismatch = 4


class CompilationMode(enum.Enum):
    FORWARD = 0
    BACKWARD = 1
    INFERENCE = 2


class ExecutionState(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORDING = 2
    EXECUTION = 3


SKIPS = []


def log_cudagraph_skip_and_bump_counter(msg):
    SKIPS.append(msg)


@dataclasses.dataclass
class WrappedFunction:
    model: object
    static_input_idxs: list
    id: FunctionID
    mutated: bool = False


class CUDAWarmupNode:
    def __init__(self, wrapped_function, parent, id):
        self.wrapped_function = wrapped_function
        self.parent = parent
        self.id = id

    def all_outputs_are_dead(self):
        return True

    def path_live_weakrefs(self):
        return []


class CUDAGraphNode:
    error_mode = False

    def __init__(self, wrapped_function, id, parent, inputs, copy_cudagraph_managed_idxs=()):
        self.wrapped_function = wrapped_function
        self.id = id
        self._parent = parent
        self.children = defaultdict(list)
        # 2.15: a demoted managed input stays static (its pointer kept) but is
        # copied in at each replay (input_copy_idxs).
        copied = set(copy_cudagraph_managed_idxs) - set(wrapped_function.static_input_idxs)
        self.cudagraph_managed_idxs = []
        self.static_input_idxs = sorted(set(wrapped_function.static_input_idxs) | set(self.cudagraph_managed_idxs)
                                        | copied)
        self.non_static_input_idx = [i for i in range(len(inputs)) if i not in self.static_input_idxs]
        self.input_copy_idxs = sorted(set(self.non_static_input_idx) | copied)
        self.static_input_data_ptrs = [
            inputs[i].data_ptr() if i in self.static_input_idxs and isinstance(inputs[i], FakeTensor) else None
            for i in range(len(inputs))
        ]

    @property
    def parent(self):
        return self._parent

    def check_invariants(self, inputs):
        if not self.error_mode:
            for i in self.static_input_idxs:
                if inputs[i].data_ptr() != self.static_input_data_ptrs[i]:
                    status = CheckInvariantStatus.StaticInputIdxMismatch
                    return status, lambda: str(status)
        return CheckInvariantStatus.SUCCESS, lambda: "SUCCESS"

    def check_static_inputs_are_stable(self, new_inputs):
        if self.error_mode:
            for i in self.static_input_idxs:
                if new_inputs[i].data_ptr() != self.static_input_data_ptrs[i]:
                    raise RuntimeError(f"static input data pointer changed: input {i}")

    def run(self, new_inputs):
        self.check_static_inputs_are_stable(new_inputs)
        out = self.wrapped_function.model(new_inputs)
        new_inputs.clear()
        return out

    def all_outputs_are_dead(self):
        return True

    def path_live_weakrefs(self):
        return [FakeRef(0x1000), FakeRef(0x2000), FakeRef(0x1000)]


class FakeRef:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


class CUDAGraphTreeManager:
    """The decisions of CUDAGraphTreeManager._run, much simplified."""

    rerecord_limit = None  # an int turns on the re-record limit
    # 2.15's managed-input demotion: the inputs each recording counts as a
    # changed managed pointer on its edge, and the count that demotes one.
    demotable = ()
    managed_input_rerecord_limit = 1

    def __init__(self):
        self.roots = defaultdict(list)
        self.ids_to_funcs = {}
        self.id_to_mode = {}
        self.warmed_up_functions = set()
        self.non_cudagraph_managed_mutation_hint = defaultdict(dict)
        self.num_rerecord = defaultdict(lambda: defaultdict(int))
        self.current_node = None
        self.path_state = ExecutionState.NONE
        self.debug_checkpointing_counter = 0
        self.graph = object()
        self.cuda_graphs_thread_pool = (0, 1)
        self.func_counter = itertools.count(0)
        self.graph_counter = itertools.count(0)
        self.warmup_counter = itertools.count(-1, -1)
        self.new_generation = True
        self.warn = False
        self.backward_marks = 0
        self.cudagraph_managed_input_rerecord = {}
        self.demoted_cudagraph_managed_idxs = {}

    @staticmethod
    def format_dealloc_msg(stack_trace):
        return f"Fake overwritten-output error. Stack trace: {stack_trace or '[none]'}. Advice."

    def add_function(self, model, inputs, static_input_idxs, stack_traces, mode, constants,
                     placeholders, mutated_input_idxs, compile_id):
        fid = FunctionID(next(self.func_counter))
        self.ids_to_funcs[fid] = WrappedFunction(model, list(static_input_idxs), fid, bool(mutated_input_idxs))
        self.id_to_mode[fid] = mode
        fn = functools.partial(self.run, function_id=fid)
        return fn, fn(inputs)

    def run(self, new_inputs, function_id):
        assert self.graph is not None, "the fake manager was shut down"
        return self._run(new_inputs, function_id)

    def set_to_running_backward(self):
        self.backward_marks += 1

    @property
    def in_recording(self):
        return self.path_state == ExecutionState.RECORDING

    @property
    def in_warmup(self):
        return self.path_state == ExecutionState.WARMUP

    def _get_node_id(self):
        return None if self.current_node is None else self.current_node.id

    def can_start_new_generation(self):
        return self.new_generation

    def _update_non_cudagraph_managed_mutation(self, function_id, inputs):
        node_id = self._get_node_id()
        mutates = self.ids_to_funcs[function_id].mutated
        self.non_cudagraph_managed_mutation_hint[node_id][function_id] = mutates
        if mutates:
            log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to mutated inputs (1 instances)")

    def _run(self, new_inputs, function_id):
        if self.in_recording:
            self.try_end_curr_recording(function_id)
        if self.in_warmup:
            self.try_end_curr_warmup(function_id)
        node_id = self._get_node_id()
        if function_id not in self.non_cudagraph_managed_mutation_hint[node_id]:
            self._update_non_cudagraph_managed_mutation(function_id, new_inputs)
        if self.non_cudagraph_managed_mutation_hint[node_id][function_id]:
            return self.ids_to_funcs[function_id].model(new_inputs)
        if function_id not in self.warmed_up_functions or self.in_warmup:
            if self.path_state == ExecutionState.EXECUTION:
                self.apply_checkpoint_execution_state_in_allocator()
            return self.run_eager(new_inputs, function_id)
        children = self.roots if self.current_node is None else self.current_node.children
        if not self.in_recording:
            mismatch = False
            for child in children[function_id]:
                status, _ = child.check_invariants(new_inputs)
                if status == CheckInvariantStatus.SUCCESS:
                    return self.execute_node(child, new_inputs)
                mismatch = True
            if self.current_node is not None and function_id in self.roots:
                self.try_end_curr_execution()
                if self.current_node is None:
                    return self.run(new_inputs, function_id)
            if mismatch and self.rerecord_limit is not None:
                self.num_rerecord[self._get_node_id()][function_id] += 1
                if self.num_rerecord[self._get_node_id()][function_id] > self.rerecord_limit:
                    log_cudagraph_skip_and_bump_counter(
                        f"skipping cudagraph due to function {function_id.id} exceeding max re-recording limit"
                    )
                    return self.ids_to_funcs[function_id].model(new_inputs)
            self.try_end_curr_execution()
            if self.current_node is not None:
                self.apply_checkpoint_execution_state_in_allocator()
        if self.demotable:
            self._update_cudagraph_managed_input_rerecord(self._get_node_id(), function_id, set(self.demotable))
        return self.record_function(new_inputs, function_id)

    def _update_cudagraph_managed_input_rerecord(self, node_id, function_id, copyable_idxs):
        """2.15's, action "copy" only: count, and demote at the limit."""
        demoted = self.demoted_cudagraph_managed_idxs.setdefault(node_id, {}).setdefault(function_id, set())
        counts = self.cudagraph_managed_input_rerecord.setdefault(node_id, {}).setdefault(function_id, {})
        for idx in sorted(set(copyable_idxs) - demoted):
            counts[idx] = counts.get(idx, 0) + 1
            if counts[idx] >= self.managed_input_rerecord_limit:
                demoted.add(idx)
        return ()

    def run_eager(self, new_inputs, function_id):
        self.warmed_up_functions.add(function_id)
        node = CUDAWarmupNode(self.ids_to_funcs[function_id], self.current_node, GraphID(next(self.warmup_counter)))
        self.current_node = node
        self.path_state = ExecutionState.WARMUP
        if self.warn:
            self.check_warn_on_unable_to_start_executing(function_id)
        return self.ids_to_funcs[function_id].model(new_inputs)

    def record_function(self, new_inputs, function_id):
        demoted = self.demoted_cudagraph_managed_idxs.get(self._get_node_id(), {}).get(function_id, ())
        node = CUDAGraphNode(self.ids_to_funcs[function_id], GraphID(next(self.graph_counter)),
                             self.current_node, new_inputs, tuple(sorted(demoted)))
        if self.current_node is None:
            self.roots[function_id].append(node)
        else:
            self.current_node.children[function_id].append(node)
        self.current_node = node
        self.path_state = ExecutionState.RECORDING
        out = self.ids_to_funcs[function_id].model(new_inputs)
        new_inputs.clear()
        return out

    def execute_node(self, node, new_inputs):
        self.current_node = node
        self.path_state = ExecutionState.EXECUTION
        return node.run(new_inputs)

    def _end(self):
        if self.can_start_new_generation() or self.current_node.all_outputs_are_dead():
            self.current_node = None
            self.path_state = ExecutionState.NONE

    def try_end_curr_recording(self, function_id):
        self._end()

    def try_end_curr_warmup(self, function_id):
        self._end()

    def try_end_curr_execution(self):
        if self.current_node is None:
            return
        self._end()

    def apply_checkpoint_execution_state_in_allocator(self):
        self.debug_checkpointing_counter += 1

    def check_warn_on_unable_to_start_executing(self, function_id):
        warnings.warn("Fake W1: unable to hit the fast path")
