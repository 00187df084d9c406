#!/usr/bin/env python3
"""A stand-in for `capsim expect` (cli/expect_command.cpp's contract), for
test_pytest_plugin.py: it parses the flags as capsim does and answers by a
rule the test controls, written in the trace's header:

  x_fake_figures       {LIMIT: N or {FUNCTION: N}}: the run's figures (a
                       count's whole-run figure is the sum over functions,
                       bytes per call the most); a limit not named is 0
  x_fake_explanations  {LIMIT: TEXT}: the paragraph after a FAIL line
  x_fake_exit          exit with this status at once (a crash), saying
                       `fake capsim: crashed` on stderr
  x_fake_sleep         seconds to sleep first (a hang)

Exit 0 when every limit holds, 1 when one is broken (stdout as capsim's),
2 on bad input (one `capsim: error: ...` line). FAKE_CAPSIM_NO_EXPECT=1
plays a capsim older than `expect`; FAKE_CAPSIM_LOG=PATH appends
{"argv": [...], "cwd": ...} per run. No dependency but the standard library.
"""

import json
import os
import re
import sys
import time

KEYS = ("max_recordings", "max_rerecords", "max_copy_bytes_per_call", "max_eager_fallbacks",
        "errors", "warnings")
FLAGS = {"--" + k.replace("_", "-"): k for k in KEYS}
VALUE = re.compile(r"^(?:([A-Za-z_][A-Za-z0-9_.\-]*)=)?([0-9]+)$")


def error(text):
    print(f"capsim: error: {text}", file=sys.stderr)
    sys.exit(2)


def limit(key, text, where):
    m = VALUE.match(text)
    if not m:
        error(f"{where}: expected N or FUNCTION=N, got '{text}'")
    return (key, m.group(1), int(m.group(2)))


def toml_limits(path):
    """The few TOML forms a limits file has: `key = N` and [function.NAME]."""
    limits, function = [], None
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        error(f"{path}: cannot read: {e.strerror}")
    for n, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        table = re.match(r"^\[function\.([A-Za-z0-9_.\-]+)\]$", line)
        pair = re.match(r"^([a-z_]+)\s*=\s*([0-9]+)$", line)
        if table:
            function = table.group(1)
        elif pair and pair.group(1) in KEYS:
            limits.append((pair.group(1), function, int(pair.group(2))))
        else:
            error(f"{path}:{n}: not a limit: '{line}'")
    return limits


def parse(argv):
    if len(argv) < 1 or argv[0].startswith("-"):
        error("expect: a FILE is required")
    opts = {"file": argv[0], "limits": [], "json": False, "junit": None, "keep_going": False}
    i = 1
    while i < len(argv):
        flag = argv[i]
        if flag in ("--json", "--keep-going"):
            opts[flag[2:].replace("-", "_")] = True
            i += 1
            continue
        if i + 1 >= len(argv):
            error(f"{flag}: a value is required")
        value = argv[i + 1]
        if flag in FLAGS:
            opts["limits"].append(limit(FLAGS[flag], value, flag))
        elif flag == "--limits":
            opts["limits"] += toml_limits(value)
        elif flag == "--junit":
            opts["junit"] = value
        else:
            error(f"unknown option '{flag}'")
        i += 2
    if not opts["limits"]:
        error("field '--limits': no limits given")
    return opts


def read_trace(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(l) for l in f if l.strip()]
    except OSError as e:
        error(f"{path}: cannot read: {e.strerror}")
    except ValueError:
        error(f"{path}: not JSON Lines")
    if not lines or lines[0].get("type") != "header":
        error(f"{path}: line 1: not a header")
    functions = {l["function"] for l in lines if l.get("type") == "function"}
    return lines[0], functions


def figure(header, key, function):
    value = header.get("x_fake_figures", {}).get(key, 0)
    if function is not None:
        return value.get(function, 0) if isinstance(value, dict) else 0
    if isinstance(value, dict):
        per = list(value.values()) or [0]
        return max(per) if key == "max_copy_bytes_per_call" else sum(per)
    return value


def check(header, functions, limits):
    out = []
    for key, function, most in limits:
        if function is not None and function not in functions:
            error(f"{key}: the run defines no function '{function}'")
        got = figure(header, key, function)
        out.append({"limit": key, "function": function, "max": most, "figure": got,
                    "holds": got <= most,
                    "explanation": header.get("x_fake_explanations", {}).get(key)})
    return out


def text(path, checks):
    lines = []
    for c in checks:
        scope = c["function"] or "all functions"
        if c["holds"]:
            lines.append(f"ok   {c['limit']} ({scope}): {c['figure']} <= {c['max']}")
            continue
        lines.append(f"FAIL {c['limit']} ({scope}): {c['figure']} > {c['max']}")
        for part in (c["explanation"] or "at action 0").splitlines():
            lines.append("    " + part)
    held = sum(1 for c in checks if c["holds"])
    lines.append(f"{path}: {held} of {len(checks)} limits hold")
    return "\n".join(lines) + "\n"


def junit(path, checks):
    failures = sum(1 for c in checks if not c["holds"])
    out = [f'<testsuite name="capsim.expect" tests="{len(checks)}" failures="{failures}">']
    for c in checks:
        name = f"{c['limit']} ({c['function'] or 'all functions'})"
        if c["holds"]:
            out.append(f'  <testcase classname="capsim.expect" name="{name}"/>')
        else:
            out.append(f'  <testcase classname="capsim.expect" name="{name}"><failure message='
                       f'"{c["figure"]} &gt; {c["max"]}"/></testcase>')
    return "\n".join(out + ["</testsuite>"]) + "\n"


def expect(argv):
    opts = parse(argv)
    header, functions = read_trace(opts["file"])
    time.sleep(float(header.get("x_fake_sleep", 0)))
    if "x_fake_exit" in header:
        print("fake capsim: crashed", file=sys.stderr)
        sys.exit(int(header["x_fake_exit"]))
    checks = check(header, functions, opts["limits"])
    if opts["junit"]:
        with open(opts["junit"], "w", encoding="utf-8") as f:
            f.write(junit(opts["file"], checks))
    holds = all(c["holds"] for c in checks)
    if opts["json"]:
        print(json.dumps({"file": opts["file"], "as_on_a_gpu": True, "holds": holds,
                          "limits": checks}))
    else:
        sys.stdout.write(text(opts["file"], checks))
    return 0 if holds else 1


def main(argv):
    log = os.environ.get("FAKE_CAPSIM_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")
    if argv[:1] == ["expect"] and os.environ.get("FAKE_CAPSIM_NO_EXPECT") != "1":
        if "--help" in argv:
            print("Usage: capsim expect [OPTIONS] file")
            return 0
        return expect(argv[1:])
    error(f"unknown subcommand '{argv[0] if argv else ''}' (known: explain; see capsim --help)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
