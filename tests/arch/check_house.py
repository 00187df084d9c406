#!/usr/bin/env python3
"""The house rules that can be checked in about a second, on every `make test`.

    tests/arch/check_house.py ROOT

Prints one line per breach, `PATH:LINE: RULE: what`, and exits 1 when there is
one, 0 when there is none, 77 (SKIP) when Universal Ctags is missing. The rules
(docs/architecture.md, "Style"):

  function-size  no C++ function body over 70 lines
  class-size     no C++ class or struct over 250 lines, beyond the classes
                 that ROOT/tests/arch/house_known.txt lists, each at most its
                 listed size
  file-size      no C++ or Python file over 600 lines, beyond those it lists
  dead           no C++ function whose name occurs only where it is declared
                 or defined
  decision-text  no C++ outside sim/core/decisions.* compares a decision's id
                 or reason (a key of sim/core/decisions.def) as a string:
                 readers switch on decision_of(event)
  milestone      no "stop N", "redesign N" or "issue N" of this project in
                 code, scripts or docs: they say what was decided and why,
                 never when (PyTorch's issues are written pytorch/pytorch#N)

Universal Ctags finds the functions and classes (its `end` field); the exact
function-size check, clang-tidy's, is slower and runs in `.ci/run` only
(lint/function_size). The known list may only shrink: a listed class or file
that grew, that fits the limit now, or that is gone, is a breach too, so that
the list is what is left to split.
"""

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

FUNCTION_LINES = 70
CLASS_LINES = 250
FILE_LINES = 600

CXX_DIRS = ["bench", "cli", "cuda_reference", "model", "properties", "render", "sim",
            "tests", "traces"]
PRODUCTION_DIRS = {"cli", "cuda_reference", "model", "properties", "render", "sim", "traces"}
CXX_SUFFIXES = {".cpp", ".hpp", ".cu", ".cuh", ".def"}

# Functions that a library calls by name: Boost.Graph's visitor events.
CALLED_BY_LIBRARIES = {"back_edge", "tree_edge", "discover_vertex", "finish_vertex"}

# A word may follow a C string's "\n" escape, where \b sees no boundary.
MILESTONE = re.compile(r"(?:\b|(?<=\\n))(?:[Ss]tops?|[Rr]edesigns?|[Ii]ssues?)\s+[0-9]+\b")
# A line that names PyTorch's tracker speaks of PyTorch's issues, not ours.
PYTORCH_TRACKER = re.compile(r"pytorch/pytorch|PyTorch(?:'s)? issues?|github\.com", re.I)
MILESTONE_SKIP = ("data/", "recorder/third_party/")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_known(root, breaches):
    """house_known.txt: `class PATH:NAME LINES` and `file PATH LINES`, # comments."""
    known = {"class": {}, "file": {}}
    rel = "tests/arch/house_known.txt"
    for i, line in enumerate(read_lines(root, rel), 1):
        words = line.split("#")[0].split()
        if not words:
            continue
        if len(words) != 3 or words[0] not in known or not words[2].isdigit():
            breaches.append((rel, i, "known", "expected `class PATH:NAME LINES` or `file PATH LINES`"))
            continue
        known[words[0]][words[1]] = int(words[2])
    return known["class"], known["file"]


def tracked_files(root):
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True,
                         check=False)
    if out.returncode == 0 and out.stdout:
        return sorted(p for p in out.stdout.decode().split("\0") if p)
    # Not a git checkout (the negative control's scratch tree): every file.
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def read_lines(root, rel):
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def ctags(root, files):
    cmd = ["ctags", "--languages=C++", "--langmap=C++:+.cu.cuh.def", "--output-format=json",
           "--fields=+neKZS", "--kinds-C++=+p", "-f", "-", *files]
    out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def body_lines(lines, tag):
    """The lines after the one holding the body's `{`, the closing one's included: clang-tidy's count."""
    start = tag["line"]
    while start <= tag["end"] and "{" not in lines[start - 1]:
        start += 1
    return tag["end"] - start


def check_functions(root, tags, breaches):
    for tag in tags:
        if tag.get("kind") != "function" or "end" not in tag:
            continue
        if tag["name"].startswith("__anon"):  # a lambda counts in its function
            continue
        n = body_lines(read_lines(root, tag["path"]), tag)
        if n > FUNCTION_LINES:
            breaches.append((tag["path"], tag["line"], "function-size",
                             f"{tag['name']} is {n} lines (at most {FUNCTION_LINES})"))


def check_classes(tags, known, breaches):
    seen = {}
    for tag in tags:
        if tag.get("kind") not in ("class", "struct") or "end" not in tag:
            continue
        key = f"{tag['path']}:{tag['name']}"
        n = tag["end"] - tag["line"] + 1
        seen[key] = max(n, seen.get(key, 0))
        limit = known.get(key, CLASS_LINES)
        if n > limit:
            extra = " (listed as known: split it, do not grow it)" if key in known else ""
            breaches.append((tag["path"], tag["line"], "class-size",
                             f"{tag['name']} is {n} lines (at most {CLASS_LINES}){extra}"))
    for key in sorted(known):
        if seen.get(key, 0) <= CLASS_LINES:
            breaches.append(("tests/arch/house_known.txt", 1, "class-size",
                             f"{key} fits now (or is gone): take it off"))


def check_files(root, files, known, breaches):
    for rel in files:
        if not (Path(rel).suffix in CXX_SUFFIXES | {".py"}) or rel.startswith(MILESTONE_SKIP):
            continue
        n = len(read_lines(root, rel))
        limit = known.get(rel, FILE_LINES)
        if n > limit:
            breaches.append((rel, 1, "file-size", f"{n} lines (at most {FILE_LINES})"))
        elif rel in known and n <= FILE_LINES:
            breaches.append(("tests/arch/house_known.txt", 1, "file-size",
                             f"{rel} fits now: take it off"))
    for rel in sorted(set(known) - set(files)):
        breaches.append(("tests/arch/house_known.txt", 1, "file-size", f"{rel} is gone: take it off"))


def check_dead(root, files, tags, breaches):
    """A function is dead when its name occurs nowhere but at its own tags."""
    words = collections.Counter()
    for rel in files:
        for line in read_lines(root, rel):
            words.update(WORD.findall(line))
    # Ctags reads a macro's call in a test (TEST_CASE, BENCHMARK) as a
    # definition, so only the tags of the libraries and the CLI are counted.
    own = [t for t in tags if t.get("kind") in ("function", "prototype")
           and t["path"].split("/")[0] in PRODUCTION_DIRS
           and not t.get("pattern", "").startswith("/^static_assert")]
    at_tags = collections.Counter(t["name"] for t in own)
    for tag in own:
        name = tag["name"]
        if not WORD.fullmatch(name):
            continue
        if name.startswith("__anon") or name == "main" or name in CALLED_BY_LIBRARIES:
            continue
        if tag.get("scope", "").split("::")[-1] == name:  # a constructor
            continue
        if words[name] <= at_tags[name]:
            breaches.append((tag["path"], tag["line"], "dead", f"{name} is never called"))


def check_decision_text(root, cxx, breaches):
    keys = set(re.findall(r'^CAPSIM_DECISION\(\w+, \w+, "(\w+)"',
                          "\n".join(read_lines(root, "sim/core/decisions.def")), re.M))
    if not keys:
        return
    alt = "|".join(sorted(keys))
    # A comparison with a key, or a helper that compares a field with one.
    compared = re.compile(rf'(?:[=!]=\s*"(?:{alt})"|"(?:{alt})"\s*[=!]=|'
                          rf'\b(?:is|events_where)\([^;]*F::(?:id|reason), "(?:{alt})")')
    for rel in cxx:
        if rel.startswith("sim/core/decisions.") or rel.split("/")[0] not in PRODUCTION_DIRS:
            continue
        for i, line in enumerate(read_lines(root, rel), 1):
            m = compared.search(line)
            if m:
                breaches.append((rel, i, "decision-text",
                                 f"{m.group(0)}: compare decision_of(event) with a Decision"))


def check_milestones(root, files, breaches):
    for rel in files:
        if rel.startswith(MILESTONE_SKIP) or Path(rel).suffix in {".jsonl", ".json", ".svg", ".png"}:
            continue
        for i, line in enumerate(read_lines(root, rel), 1):
            m = MILESTONE.search(line)
            if m and not PYTORCH_TRACKER.search(line):
                breaches.append((rel, i, "milestone",
                                 f"'{m.group(0)}': say what was decided and why, not when"))


def main(argv):
    if len(argv) != 2:
        print("usage: check_house.py ROOT", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    try:
        subprocess.run(["ctags", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        print("check_house.py: Universal Ctags is not installed; skipping", file=sys.stderr)
        return 77
    files = tracked_files(root)
    cxx = [f for f in files if Path(f).suffix in CXX_SUFFIXES and f.split("/")[0] in CXX_DIRS]
    tags = ctags(root, cxx)
    breaches = []
    known_classes, known_files = read_known(root, breaches)
    check_functions(root, tags, breaches)
    check_classes(tags, known_classes, breaches)
    check_files(root, files, known_files, breaches)
    check_dead(root, cxx, tags, breaches)
    check_decision_text(root, cxx, breaches)
    check_milestones(root, files, breaches)
    for path, line, rule, what in sorted(set(breaches)):
        print(f"{path}:{line}: {rule}: {what}")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
