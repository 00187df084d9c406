#!/usr/bin/env bash
# Records the cudagraph-tree programs of recorder (capsim_recorder
# --cudagraphs: torch.compile(mode="reduce-overhead") training loops) on a
# CUDA GPU, as capsim traces. For a machine with an NVIDIA GPU and the pinned
# PyTorch (scripts/install-torch.sh, or any python that imports torch 2.11
# with CUDA); needs no network.
#   scripts/record-torch-cudagraphs.sh [OUT_DIR]    (default build/torch-cudagraphs)
# Writes OUT_DIR/NAME.jsonl per program, OUT_DIR/summary.txt (one line per
# program: recorded, or the exception) and OUT_DIR/record.log (the recorder's
# stderr). All programs run in one process first (each with its own time
# limit); any that did not report, because that process hung or died, then
# run alone while time is left. The whole run stays under 5 minutes.
# Exit: 0 all recorded, 1 some did not, 77 no CUDA device (one line), 2 usage.
# Python: $CAPSIM_PYTHON, else build/torch-venv/bin/python, else python3.
# CAPSIM_CUDAGRAPHS_DEVICE=cpu runs the same on the CPU (no cudagraphs: a check
# of the recorder and of this script, not a recording).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
out=${1:-build/torch-cudagraphs}
if [ -n "${CAPSIM_PYTHON:-}" ]; then
  py=$CAPSIM_PYTHON
elif [ -x build/torch-venv/bin/python ]; then
  py=build/torch-venv/bin/python
else
  py=python3
fi

budget=285      # seconds for everything after the device check
per_program=60  # the recorder's own limit per program (SIGALRM)
first_pass=210  # the one-process pass; the rest is for single reruns
start=$SECONDS

device=${CAPSIM_CUDAGRAPHS_DEVICE:-cuda}
if [ "$device" = cuda ] &&
  ! timeout -k 5 90 "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  echo "record-torch-cudagraphs: no CUDA device ($py: torch.cuda.is_available() is not True)"
  exit 77
fi

mkdir -p "$out" || exit 2
raw=$out/summary.raw
log=$out/record.log
: >"$raw"
: >"$log"
export PYTHONPATH="$root/recorder${PYTHONPATH:+:$PYTHONPATH}"
# Inductor's and Triton's caches: outside the output, kept between runs.
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-${TMPDIR:-/tmp}/capsim-torchinductor-cache}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-${TMPDIR:-/tmp}/capsim-triton-cache}
export PYTHONUNBUFFERED=1

mapfile -t programs < <(timeout -k 5 90 "$py" -m capsim_recorder --cudagraphs --list 2>>"$log" | awk '{print $1}')
if [ "${#programs[@]}" -eq 0 ]; then
  echo "record-torch-cudagraphs: could not list the programs (see $log)"
  exit 1
fi
echo "record-torch-cudagraphs: ${#programs[@]} programs with $py on $device into $out"

left() { echo $((budget - (SECONDS - start))); }

# Pass 1: all programs in one process.
limit=$first_pass
[ "$(left)" -lt "$limit" ] && limit=$(left)
timeout -k 10 "$limit" "$py" -m capsim_recorder --cudagraphs --device "$device" --out "$out" \
  --timeout "$per_program" --summary "$raw" >>"$log" 2>&1
rc=$?
[ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "record-torch-cudagraphs: the one-process pass ran past ${limit} s" | tee -a "$log"

# Pass 2: each program without a summary line, alone.
for name in "${programs[@]}"; do
  grep -q "^$name: " "$raw" && continue
  t=$(left)
  if [ "$t" -lt 30 ]; then
    echo "$name: not run (the 5-minute budget was spent)" >>"$raw"
    continue
  fi
  [ "$t" -gt $((per_program + 15)) ] && t=$((per_program + 15))
  echo "record-torch-cudagraphs: $name alone (limit ${t} s)" | tee -a "$log"
  timeout -k 5 "$t" "$py" -m capsim_recorder --cudagraphs --device "$device" --out "$out" \
    --program "$name" --timeout "$per_program" --summary "$raw" >>"$log" 2>&1
  rc=$?
  if ! grep -q "^$name: " "$raw"; then
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "$name: exception timeout: killed after ${t} s (no trace)" >>"$raw"
    else
      echo "$name: exception: the recorder exited with $rc and no summary line (no trace; see record.log)" >>"$raw"
    fi
  fi
done

# summary.txt: one line per program, in the programs' order.
summary=$out/summary.txt
: >"$summary"
for name in "${programs[@]}"; do
  grep "^$name: " "$raw" | tail -n 1 >>"$summary"
done
rm -f "$raw" "$out"/*.jsonl.tmp
cat "$summary"
if grep -qv ": recorded" "$summary"; then
  exit 1
fi
exit 0
