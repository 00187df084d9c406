# What the hostile-input catalogues share (sourced by hostile_inputs.sh and
# hostile_flags.sh): `edit` makes an input from a corpus trace with one line
# changed, `fresh` enters a new case folder under $root, and `check` runs one
# case and counts it in $passed or $failed.

# edit SRC LINE PYTHON-EXPR OUT: line LINE (1-based) of SRC becomes the value
# of the expression over `l` (the line's text).
edit() {
  python3 - "$1" "$2" "$3" "$4" <<'EOF'
import sys
src, n, expr, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = open(src, encoding="utf-8").read().split("\n")
l = lines[n - 1]
lines[n - 1] = eval(expr)
open(out, "w", encoding="utf-8").write("\n".join(lines))
EOF
}

# check NAME RC PATTERN -- COMMAND...: runs COMMAND in the case's folder
# (prepared by the caller, whose files are the "before" listing).
check() {
  local name=$1 want_rc=$2 pattern=$3
  shift 3
  [ "$1" = "--" ] && shift
  local before after rc
  before=$(ls -A | sort)
  timeout 20 "$@" >../out 2>../err
  rc=$?
  after=$(ls -A | sort)
  local why=""
  if [ "$rc" = 124 ]; then
    why="ran past 20 s"
  elif [ "$rc" != "$want_rc" ]; then
    why="exit $rc, expected $want_rc"
  elif ! cat ../out ../err | grep -Eq -- "$pattern"; then
    why="output does not match /$pattern/"
  elif [ "$want_rc" = 2 ] && [ "$(wc -l <../err)" != 1 ]; then
    why="expected one line on stderr"
  elif [ "$before" != "$after" ] && [ -z "${EXPECT_NEW:-}" ]; then
    why="files left behind: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  fi
  if [ -n "$why" ]; then
    echo "FAIL $name: $why"
    sed 's/^/  stdout: /' ../out | head -5
    sed 's/^/  stderr: /' ../err | head -5
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}

# fresh NAME: a new empty case folder, entered.
fresh() {
  mkdir -p "$root/$1/w"
  cd "$root/$1/w" || exit 1
}

# big_tensors SRC COUNT OUT: SRC's header, then COUNT new_tensor actions of
# 2^24 floats (64 MiB each) and no events: a trace that asks for memory.
big_tensors() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
header = open(sys.argv[1]).readline().strip()
out = [header] + [json.dumps({"seq": i + 1, "type": "action", "index": i, "action": "new_tensor",
                              "name": f"t{i}", "sizes": [16777216]}, separators=(",", ":"))
                  for i in range(int(sys.argv[2]))]
open(sys.argv[3], "w").write("\n".join(out) + "\n")
EOF
}
