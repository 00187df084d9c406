#!/usr/bin/env bash
# Every output flag of every subcommand, tried on every input of its command:
# the same path, ./path, a symbolic link, a hard link, and (for a folder the
# command reads) a file inside it. Each must be refused with exit 2, one line
# naming the output, no file written and the input byte for byte as it was.
#
#   outputs_onto_inputs.sh CAPSIM CORPUS_DIR PROGRAMS_DIR REGRESSION
#
# The outputs come from the binary's own definition (`capsim version
# --paths`), so a new output flag fails this test until it has a row in
# `command_for` below: it cannot escape the guard unseen.
set -u
capsim=$(realpath "$1")
corpus=$(realpath "$2")
programs=$(realpath "$3")
regression=$(realpath "$4")
reg=regs/$(basename "$regression")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
passed=0 failed=0

# command_for SUB OPTION TARGET: the command line (one word a line) whose
# output OPTION is TARGET, with the input files in.jsonl / in.dot and the
# folder regs/ (one regression) of the case folder. Empty for a subcommand without inputs.
command_for() {
  local target=$3
  case "$1 $2" in
    "record --output") ;;  # reads nothing but a built-in scenario
    "simulate --output") printf '%s\n' simulate in.jsonl -o "$target" ;;
    "explain --html") printf '%s\n' explain in.jsonl --html "$target" ;;
    "expect --junit") printf '%s\n' expect in.jsonl --errors 0 --junit "$target" ;;
    "replay --dot") printf '%s\n' replay in.dot --dot "$target" ;;
    "render --output") printf '%s\n' render in.dot -o "$target" ;;
    "diff --output") printf '%s\n' diff in.dot other.jsonl -o "$target" ;;
    "export --chrome") printf '%s\n' export --chrome "$target" in.jsonl ;;
    "check --junit") printf "%s\n" check --regressions regs --no-controls --cases 1 --property capture.no-proxy-metadata-read --junit "$target" ;;
    "check --save-failures") printf "%s\n" check --regressions regs --no-controls --cases 1 --property capture.no-proxy-metadata-read --save-failures "$target" ;;
    *) echo "UNKNOWN" ;;
  esac
}

# The input an output is aimed at, for a subcommand's command line.
input_of() {
  case "$1" in
    replay | render | diff) echo in.dot ;;
    check) echo regs ;;
    *) echo in.jsonl ;;
  esac
}

# try NAME SUB OPTION TARGET: one refused write, checked.
try() {
  local name=$1 sub=$2 option=$3 target=$4
  local case_dir="$root/$name"
  mkdir -p "$case_dir/regs"
  cd "$case_dir" || exit 1
  cp "$programs/output_kept_overwritten.jsonl" in.jsonl
  cp "$corpus/run_simple.jsonl" in.dot
  cp "$corpus/run_simple.jsonl" other.jsonl
  cp "$regression" "$reg"
  ln -s in.jsonl link.jsonl
  ln -s in.dot link.dot
  ln in.jsonl hard.jsonl
  ln in.dot hard.dot
  ln -s regs regs_link
  local before
  before=$(find . -printf '%p %y %s\n' | sort
           sha256sum in.jsonl in.dot "$reg")
  mapfile -t argv < <(command_for "$sub" "$option" "$target")
  timeout 20 "$capsim" "${argv[@]}" >out.txt 2>err.txt
  local rc=$?
  local after
  after=$(find . -printf '%p %y %s\n' | grep -v -e '^./out.txt ' -e '^./err.txt ' | sort
          sha256sum in.jsonl in.dot "$reg")
  local why=""
  if [ "$rc" != 2 ]; then
    why="exit $rc, expected 2"
  elif [ "$(wc -l <err.txt)" != 1 ]; then
    why="expected one line on stderr"
  elif ! grep -Eq "capsim: error: .*(is the input|is in the folder)" err.txt; then
    why="stderr does not say which input"
  elif [ "$before" != "$after" ]; then
    why="files changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  fi
  if [ -n "$why" ]; then
    echo "FAIL $name ($capsim ${argv[*]}): $why"
    sed 's/^/  stderr: /' err.txt | head -3
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}

outputs=$("$capsim" version --paths | awk '$3 == "output" || $3 == "output-dir" { print $1, $2 }')
[ -n "$outputs" ] || { echo "FAIL: capsim version --paths lists no output"; exit 1; }
while read -r sub option; do
  first=$(command_for "$sub" "$option" X | head -1)
  if [ "$first" = UNKNOWN ]; then
    echo "FAIL: $sub $option is an output with no row in command_for: add one"
    failed=$((failed + 1))
    continue
  fi
  [ -n "$first" ] || continue
  input=$(input_of "$sub")
  stem=${input%.*}
  ext=${input##*.}
  if [ "$input" = regs ]; then
    targets="regs/new.jsonl ./$reg regs_link/x.xml"
    [ "$option" = --save-failures ] && targets="regs ./regs regs_link"
  else
    targets="$input ./$input link.$ext hard.$ext"
  fi
  for target in $targets; do
    try "${sub}_${option#--}_$(echo "$target" | tr '/.' '__')" "$sub" "$option" "$target"
  done
  # A drawing's DOT lands beside its picture: in.svg would write in.dot.
  if [ "$option" = --output ] && [ "$sub" = render ] || [ "$option" = --dot ]; then
    try "${sub}_${option#--}_svg_beside" "$sub" "$option" "$stem.svg"
  fi
done <<<"$outputs"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
