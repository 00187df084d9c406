#!/usr/bin/env bash
# backend_cuda.sh CAPSIM: `--backend cuda` as a user meets it, with or
# without a GPU. Without one (or in a build without nvcc) check and record
# exit 2 with one line that says why, and write nothing; with one, the
# property passes and the recording replays on the CPU model.
set -u
capsim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$capsim" check --backend cuda --property reference.agrees --cases 20 --no-progress \
  >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ]; then
  [ "$(wc -l <"$dir/err")" = 1 ] || fail "check: more than one line on stderr: $(cat "$dir/err")"
  grep -Eq '^capsim: error: --backend cuda: (no CUDA device|this build has no CUDA backend)' \
    "$dir/err" || fail "check: $(cat "$dir/err")"
  "$capsim" record --backend cuda run_simple -o "$dir/t.jsonl" 2>"$dir/err"
  [ $? -eq 2 ] || fail "record without a GPU did not exit 2"
  [ -e "$dir/t.jsonl" ] && fail "record without a GPU wrote a file"
  grep -Eq '^capsim: error: --backend cuda: ' "$dir/err" || fail "record: $(cat "$dir/err")"
  echo "no CUDA device: the refusals checked"
  exit 0
fi
[ $rc -eq 0 ] || fail "check --backend cuda exited $rc: $(cat "$dir/out" "$dir/err")"
"$capsim" record --backend cuda run_simple -o "$dir/t.jsonl" || fail "record --backend cuda"
grep -q '"producer":"capsim-cuda"' "$dir/t.jsonl" || fail "not a capsim-cuda trace"
"$capsim" replay "$dir/t.jsonl" || fail "the GPU's trace does not replay on the model"
