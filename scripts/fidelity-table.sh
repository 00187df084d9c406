#!/usr/bin/env bash
# Prints docs/fidelity.md's release table: one row per program of
# data/corpus/torch/, one column per release folder, each cell what
# `capsim replay` finds: "matched" (node for node), or the first divergence.
# A trace listed as structural in the document's expected-divergences block is
# replayed with --structural and marked so. tests/cli/doc_table.sh checks
# that the document holds exactly this output.
#   scripts/fidelity-table.sh CAPSIM
set -euo pipefail
capsim=$1
root=$(cd "$(dirname "$0")/.." && pwd)
corpus=$root/data/corpus/torch
doc=$root/docs/fidelity.md
python3 - "$capsim" "$corpus" "$doc" <<'PY'
import json, os, subprocess, sys

capsim, corpus, doc = sys.argv[1:4]

def version_key(v):
    return tuple(int(p) for p in v.split("."))

structural = set()
inside = False
for line in open(doc, encoding="utf-8"):
    line = line.rstrip("\n")
    if line == "```expected-divergences":
        inside = True
    elif inside and line == "```":
        break
    elif inside and " structural " in f" {line} ":
        structural.add(line.split(" ", 1)[0])

releases = sorted((d for d in os.listdir(corpus) if os.path.isdir(os.path.join(corpus, d))),
                  key=version_key)
programs = sorted({f[:-6] for r in releases for f in os.listdir(os.path.join(corpus, r))
                   if f.endswith(".jsonl")})
cells = {}
for r in releases:
    for p in programs:
        key = f"{r}/{p}.jsonl"
        path = os.path.join(corpus, key)
        if not os.path.exists(path):
            cells[r, p] = "not recorded"
            continue
        args = [capsim, "replay", "--json", path] + (["--structural"] if key in structural else [])
        out = subprocess.run(args, capture_output=True, text=True)
        report = json.loads(out.stdout)[0]
        d = report.get("divergence")
        cell = "matched" if d is None else f"diverged, line {d['line']}: {d['field']}"
        cells[r, p] = cell + (" (structural)" if key in structural else "")
print("| program | " + " | ".join(releases) + " |")
print("|---|" + "---|" * len(releases))
for p in programs:
    print(f"| `{p}` | " + " | ".join(cells[r, p] for r in releases) + " |")
PY
