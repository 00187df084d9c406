#!/usr/bin/env bash
# Records the third-party corpus (recorder/third_party/scripts.txt) with one
# PyTorch release, in both forms: plain (compiled autograd recorded from the
# unchanged eager script) and compiled (`CAPSIM_COMPILE=1`, the one
# `torch.compile(mode="reduce-overhead")` line, `run --cudagraphs`).
#
#   scripts/record-third-party.sh PYTHON OUTDIR [NAME...]
#
# PYTHON is a Python with torch, torchvision, pillow and matplotlib (the
# scripts' own imports); OUTDIR gets NAME.plain.jsonl, NAME.compiled.jsonl and
# timings.txt (seconds: the script alone, then each recording). Each script
# runs in a fresh temporary copy of its upstream folder with its patch applied.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tp=$here/recorder/third_party
[ $# -ge 2 ] || { echo "usage: $0 PYTHON OUTDIR [NAME...]" >&2; exit 2; }
case $1 in */*) python=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") ;; *) python=$(command -v "$1") ;; esac
[ -x "$python" ] || { echo "$0: no python at $1" >&2; exit 2; }
out=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
wanted=" $* "
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs a command with its output in a log file; prints its seconds.
seconds() { local log=$1 start=$SECONDS; shift; "$@" > "$log" 2>&1 || echo "exit $?" >> "$log"; echo $((SECONDS - start)); }

# Copies an upstream folder, applies its patch, prepares its data; prints the
# folder to run in.
prepare() {
  local folder=$1 dir base
  base=$(basename "$folder")
  dir=$(mktemp -d "$work/$base.XXXX")
  cp -r "$tp/upstream/$folder" "$dir/$base"
  patch -s -p1 -d "$dir" < "$tp/patches/$base.patch"
  mkdir -p "$dir/$base/results"
  if [ "$base" = nanoGPT ]; then
    (cd "$dir/$base" && "$python" "$tp/prepare_nanogpt_data.py")
  fi
  echo "$dir/$base"
}

train_args=""
while IFS='|' read -r name folder entry args compiled_args; do
  name=$(echo "$name" | xargs); folder=$(echo "$folder" | xargs)
  entry=$(echo "$entry" | xargs); args=$(echo "$args" | xargs)
  compiled_args=$(echo "$compiled_args" | xargs)
  [ "$name" = nanogpt_train ] && train_args=$args
  [ "$wanted" = "  " ] || [[ "$wanted" == *" $name "* ]] || continue
  for form in alone plain compiled; do
    dir=$(prepare "$folder")
    if [ "$entry" = sample.py ]; then  # sample.py reads train.py's checkpoint
      (cd "$dir" && "$python" train.py $train_args --always_save_checkpoint=True > /dev/null 2>&1)
    fi
    log=$out/$name.$form.log
    case $form in
      alone) t=$(cd "$dir" && seconds "$log" "$python" "$entry" $args) ;;
      plain) t=$(cd "$dir" && seconds "$log" env PYTHONPATH="$here/recorder" "$python" -m capsim_recorder run \
                   -o "$out/$name.plain.jsonl" -- "$entry" $args) ;;
      compiled) t=$(cd "$dir" && seconds "$log" env CAPSIM_COMPILE=1 PYTHONPATH="$here/recorder" "$python" \
                   -m capsim_recorder run --cudagraphs -o "$out/$name.compiled.jsonl" -- "$entry" \
                   $args $compiled_args) ;;
    esac
    echo "$name $form ${t}s" | tee -a "$out/timings.txt"
  done
done < <(grep -v '^#' "$tp/scripts.txt")
