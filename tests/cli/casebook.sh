#!/usr/bin/env bash
# docs/casebook.md's cases still reproduce: every program of data/casebook/
# is explained by capsim, and the decisions the page's `casebook` block lists
# are there (KEY@ACTION), absent (!KEY) or counted (#KEY=N), and the fix
# `--what-if auto` ranks first (auto=EDIT, or auto=none). Every program of the
# folder must be listed, so that none goes unchecked.
#   casebook.sh CAPSIM
set -euo pipefail
capsim=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || exit 77
python3 - "$capsim" "$root" <<'PY'
import json, os, subprocess, sys

capsim, root = sys.argv[1:3]
folder = os.path.join(root, "data", "casebook")
lines, inside = [], False
for line in open(os.path.join(root, "docs", "casebook.md"), encoding="utf-8"):
    line = line.rstrip("\n")
    if line == "```casebook":
        inside = True
    elif inside and line == "```":
        break
    elif inside and line.strip():
        lines.append(line.split())
decisions = {}
def explained(name):
    if name not in decisions:
        out = subprocess.run([capsim, "explain", "--json", os.path.join(folder, name)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{name}: capsim explain exited {out.returncode}: {out.stderr.strip()}")
        # Folded paragraphs carry the actions of the others in "again".
        decisions[name] = [(e["event"], a) for e in json.loads(out.stdout)["explanations"]
                           for a in [e["action"]] + e.get("again", [])]
    return decisions[name]
def first_auto_edit(name):
    out = subprocess.run([capsim, "explain", "--json", "--what-if", "auto",
                          os.path.join(folder, name)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{name}: capsim explain --what-if auto exited {out.returncode}: {out.stderr.strip()}")
    ranked = [w for w in json.loads(out.stdout)["what_if"] if w["outcome"] == "better"]
    return ranked[0]["edit"] if ranked else "none"
failed = 0
for name, claim in lines:
    if claim.startswith("auto="):
        got = first_auto_edit(name)
        ok = got == claim[5:]
        if not ok:
            failed += 1
            print(f"FAIL {name}: {claim}; --what-if auto ranks first {got}")
        continue
    got = explained(name)
    if claim.startswith("!"):
        ok = all(k != claim[1:] for k, _ in got)
    elif claim.startswith("#"):
        key, n = claim[1:].split("=")
        ok = sum(1 for k, _ in got if k == key) == int(n)
    else:
        key, action = claim.split("@")
        ok = (key, int(action)) in got
    if not ok:
        failed += 1
        print(f"FAIL {name}: {claim}; explain says {got}")
listed = {name for name, _ in lines}
programs = {f for f in os.listdir(folder) if f.endswith(".jsonl")}
for missing in sorted(programs - listed):
    failed += 1
    print(f"FAIL {missing}: in data/casebook/ but not in docs/casebook.md's block")
for gone in sorted(listed - programs):
    failed += 1
    print(f"FAIL {gone}: listed in docs/casebook.md but not in data/casebook/")
print(f"casebook: {len(lines)} assertions over {len(programs)} programs, {failed} failed")
sys.exit(1 if failed else 0)
PY
