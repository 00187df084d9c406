#!/usr/bin/env python3
"""Derives the divergence demos in data/corpus/diverging/ from the corpus.

Each demo is a corpus trace with one deliberate edit, the kind of lie a buggy
producer (or a real bug in the system under test) would write. `capsim replay`
must fail on each with the first-divergence line that tests/CMakeLists.txt
pins. Edits are made on parsed lines, then `seq` is renumbered, so the demos
stay valid traces in every other respect.
"""
import json
import pathlib

CORPUS = pathlib.Path(__file__).resolve().parent.parent / "data" / "corpus"


def load(name):
    return [json.loads(line) for line in (CORPUS / f"{name}.jsonl").read_text().splitlines()]


def save(name, lines):
    for seq, line in enumerate(lines):
        line["seq"] = seq
    text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    (CORPUS / "diverging" / f"{name}.jsonl").write_text(text)


def find(lines, **fields):
    return next(i for i, l in enumerate(lines) if all(l.get(k) == v for k, v in fields.items()))


# 1. The static input's pointer changed (a new bias tensor), but the producer
#    did not re-record: it replayed graph 0 with the new pointer, so graph 0
#    reads the old bias. The model predicts a re-record there.
lines = load("rerecord_if_static_input_address_changed")
at = find(lines, type="event", event="record", graph=1)
record = lines[at]
base = {"seq": 0, "type": "event", "action": record["action"], "fid": 0, "function": "foo", "graph": 0}
copy_in = dict(base, event="copy_in", copies=1, bytes=8)
replay = dict(base, event="replay", static_ptrs=record["static_ptrs"])
for key in ("copies", "bytes"):
    copy_in[key] = copy_in.pop(key)
lines[at:at + 1] = [
    {k: copy_in[k] for k in ("seq", "type", "action", "event", "fid", "function", "graph", "copies", "bytes")},
    {k: replay[k] for k in ("seq", "type", "action", "event", "fid", "function", "graph", "static_ptrs")},
]
for line in lines[at + 2:]:
    if line.get("graph") == 1:
        line["graph"] = 0
lines[0]["name"] = "static_pointer_changed_without_rerecord"
save("static_pointer_changed_without_rerecord", lines)

# 2. A copy count the model does not predict: the first replay copied two
#    inputs, but only input 3 is non-static.
lines = load("rerecord_if_static_input_address_changed")
at = find(lines, type="event", event="copy_in", graph=0)
lines[at]["copies"] = 2
lines[at]["bytes"] = 16
lines[0]["name"] = "unpredicted_copy_count"
save("unpredicted_copy_count", lines)

# 3. A value digest that differs: the program read `inp` after the compiled
#    function mutated it, and the producer saw other values.
lines = load("mutation_on_inp")
at = find(lines, type="event", event="read")
lines[at]["digest"] = "0123456789abcdef"
lines[0]["name"] = "value_digest_differs"
save("value_digest_differs", lines)
