"""A 7-billion-parameter model simulated with values off, in under 1 GB.

Writes a program (docs/trace-format.md §10) shaped as LLaMA-7B in bfloat16:
a 32000 x 4096 embedding and output head, 32 layers of four 4096 x 4096
attention weights and three 4096 x 11008 MLP weights with two norms each, a
compiled forward over all of them (one generic op per weight), called at
three steps with a fresh batch each, its logits read. `capsim simulate`
must run it with values off (auto: its tensors pass 1 GiB) in under 1 GB of
peak host memory, record the forward at the second call and copy only the
batch at the third, whatever the values.

    python3 values_off_7b.py CAPSIM
"""

import json
import math
import os
import resource
import subprocess
import sys
import tempfile

HIDDEN, FFN, VOCAB, LAYERS = 4096, 11008, 32000, 32
RSS_LIMIT_KB = 1 << 20  # 1 GiB


def weights():
    yield "embed", [VOCAB, HIDDEN]
    for layer in range(LAYERS):
        for name in ("q", "k", "v", "o"):
            yield f"l{layer}_{name}", [HIDDEN, HIDDEN]
        yield f"l{layer}_gate", [HIDDEN, FFN]
        yield f"l{layer}_up", [HIDDEN, FFN]
        yield f"l{layer}_down", [FFN, HIDDEN]
        yield f"l{layer}_norm1", [HIDDEN]
        yield f"l{layer}_norm2", [HIDDEN]
    yield "norm", [HIDDEN]
    yield "head", [HIDDEN, VOCAB]


def result(sizes):
    strides, step = [], 1
    for s in reversed(sizes):
        strides.insert(0, step)
        step *= s
    return {"sizes": sizes, "strides": strides, "storage_offset": 0, "dtype": "bfloat16"}


def program():
    params = list(weights())
    inputs = [name for name, _ in params] + ["x"]
    ops, value, width = [], len(inputs) - 1, HIDDEN
    for k, (name, sizes) in enumerate(params):
        if name == "embed":
            continue
        if len(sizes) == 1:  # a norm: elementwise, the same width
            target, out = "aten.mul.Tensor", [1, width]
        else:
            target, out = "aten.mm.default", [1, sizes[1]]
            width = sizes[1]
        ops.append({"op": "generic", "target": target, "attrs": "", "args": [value, k],
                    "results": [result(out)]})
        value = len(inputs) + len(ops) - 1
    lines = [{"type": "header", "name": "llama7b_values_off", "config": {"cudagraphs": True}},
             {"type": "function", "function": "fwd", "mode": "inference", "inputs": inputs,
              "ops": ops, "outputs": [value],
              "static_input_idxs": list(range(len(params))),
              "param_input_idxs": list(range(len(params)))}]
    for name, sizes in params:
        lines.append({"type": "action", "action": "new_tensor", "name": name, "sizes": sizes,
                      "dtype": "bfloat16", "parameter": True})
    for step in range(3):
        lines.append({"type": "action", "action": "new_tensor", "name": f"x{step}",
                      "sizes": [1, HIDDEN], "dtype": "bfloat16"})
        lines.append({"type": "action", "action": "call", "function": "fwd",
                      "args": [name for name, _ in params] + [f"x{step}"],
                      "outputs": [f"logits{step}"]})
        lines.append({"type": "action", "action": "read", "name": f"logits{step}"})
        lines.append({"type": "action", "action": "del", "name": f"logits{step}"})
    return lines


def main():
    capsim = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "llama7b.jsonl")
        with open(path, "w") as f:
            f.write("".join(json.dumps(line) + "\n" for line in program()))
        done = subprocess.run([capsim, "simulate", path], capture_output=True, text=True)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = done.stdout + done.stderr
    params = sum(math.prod(s) for _, s in weights())
    print(f"{params / 1e9:.2f}B parameters; peak host memory {peak_kb // 1024} MiB")
    if done.returncode != 0:
        sys.exit(f"capsim simulate failed:\n{out}")
    expected = ["values off (", "1 recorded, 0 re-recorded, 1 replays, 1 copies (8192 bytes)"]
    for text in expected:
        if text not in out:
            sys.exit(f"missing {text!r} in:\n{out[-2000:]}")
    if peak_kb > RSS_LIMIT_KB:
        sys.exit(f"peak host memory {peak_kb} KiB is over {RSS_LIMIT_KB} KiB")


if __name__ == "__main__":
    main()
