#!/usr/bin/env bash
# Prints docs/fidelity.md's table of the third-party corpus
# (data/third_party/RELEASE/NAME.FORM.jsonl, recorded by
# scripts/record-third-party.sh): per trace, the graphs it holds and left out,
# how many of them capsim runs exactly (no generic op), how many of their ops
# it runs exactly, what replay says, and how many decisions
# `explain --as-on-a-gpu` explains. tests/cli/doc_table.sh
# checks that the document shows what this prints.
#   third-party-table.sh CAPSIM
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 CAPSIM" >&2; exit 2; }
exec python3 - "$1" "$root/data/third_party" <<'PY'
import json, pathlib, re, subprocess, sys

capsim, corpus = sys.argv[1], pathlib.Path(sys.argv[2])

def run(*args):
    done = subprocess.run([capsim, *args], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr

def counts(path):
    graphs = backwards = exact = generic = getitem = fully_exact = 0
    left_out = 0
    for line in path.open():
        record = json.loads(line)
        kind = record.get("type")
        if kind == "header":
            left_out = len(record.get("x_untranslated", []))
        elif kind == "function":
            graphs += 1
            names = [op.get("op") for op in record["ops"]]
            generic += names.count("generic")
            getitem += names.count("getitem")
            exact += len(names) - names.count("generic") - names.count("getitem")
            fully_exact += "generic" not in names
        elif kind == "event" and record.get("event") == "ca_graph" and record.get("captured"):
            backwards += 1
    return graphs, left_out, exact, generic, getitem, backwards, fully_exact

def replay(path):
    rc, out = run("replay", "--json", str(path))
    report = json.loads(out)[0] if out.lstrip().startswith("[") else None
    if report is None: return "error"
    if report["ok"]: return "ok" if report["complete"] else "ok, incomplete"
    div = report.get("divergence") or {}
    return f"differs at line {div.get('line')}, {div.get('field')}"

def explained(path):
    """How many decisions explain explains as on a GPU, and the action where
    that run dies (its first uncaught RuntimeError), or "-"."""
    _, out = run("explain", "--as-on-a-gpu", str(path))
    found = re.findall(r": (\d+) decisions? explained", out)
    died = re.findall(r"ends at action (\d+)'s RuntimeError", out)
    return (found[-1] if found else "?"), (died[-1] if died else "-")

print("| script | release | form | graphs in the trace | left out | fully exact | ops exact / generic / getitem | backwards captured | replay | decisions explained as on a GPU | a GPU run dies at action |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for release in sorted(p for p in corpus.iterdir() if p.is_dir()):
    for path in sorted(release.glob("*.jsonl")):
        name, form = path.stem.rsplit(".", 1)
        graphs, left_out, exact, generic, getitem, backwards, fully_exact = counts(path)
        ops = f"{exact} / {generic} / {getitem}" if graphs else "-"
        full = fully_exact if graphs else "-"
        print(f"| {name} | {release.name} | {form} | {graphs} | {left_out} | {full} | {ops} | {backwards} | {replay(path)} | {' | '.join(explained(path))} |")
PY
