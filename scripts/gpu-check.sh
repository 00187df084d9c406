#!/usr/bin/env bash
# gpu-check.sh: the checks of the CUDA reference backend on a GPU machine, in one
# bounded run (about 8 minutes at most). docs/gpu-runs.md explains the table.
#
#   scripts/gpu-check.sh --prepare [BUILD_DIR]
#       On the build machine (no GPU needed). Writes BUILD_DIR/gpu-bin/ (stripped
#       copies of capsim and the CUDA test executables) and BUILD_DIR/gpu-libs/
#       (the shared libraries they need beyond glibc, libstdc++ and CUDA), and
#       prints the paths to carry to the GPU machine. BUILD_DIR: build/default.
#
#   scripts/gpu-check.sh [OUTDIR]
#       On the GPU machine. Runs the CUDA test executables, `capsim check
#       --backend cuda --property 'reference.*'`, and records every built-in
#       scenario with the CUDA backend, replaying each trace through the CPU model.
#       Prints a table and writes OUTDIR/summary.md. OUTDIR: build/gpu-check.
#       Exit 0: nothing failed. Exit 1: something failed or was not run, or there
#       is no GPU ("no GPU: nothing checked"). Exit 2: bad usage.
#
# Environment: CAPSIM_BUILD_DIR (default build/default) is where binaries are
# looked for; GPU_CHECK_BACKEND=host runs the same plumbing against the host
# reference backend (a dry run of this script without a GPU, not a GPU check).
# No network access is needed or attempted.
set -u
set -o pipefail
export LC_ALL=C

caller_pwd=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

die() { echo "gpu-check: $*" >&2; exit 2; }
abspath() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$caller_pwd/$1" ;; esac; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
bytes_of() { local total=0 f s; for f in "$@"; do [ -e "$f" ] || continue; s=$(du -sb -- "$f" | cut -f1); total=$((total + s)); done; echo "$total"; }
relpath() { case $1 in "$root"/*) printf '%s\n' "${1#"$root"/}" ;; *) printf '%s\n' "$1" ;; esac; }

# The CUDA test executables, with the ctest names they have (tests/CMakeLists.txt).
cuda_tests=(capsim_cuda_tests capsim_cuda_backend_tests)
cuda_test_names=(cuda/device_kernels cuda/backend)

# Libraries never copied: glibc's, the C++ runtime's, and the CUDA driver's and
# toolkit's (the GPU machine has its own, matched to its kernel driver).
excluded_lib() {
  case $1 in
    linux-vdso.so* | linux-gate.so* | ld-linux*) return 0 ;;
    libc.so* | libm.so* | libmvec.so* | libpthread.so* | libdl.so* | librt.so*) return 0 ;;
    libresolv.so* | libutil.so* | libanl.so*) return 0 ;;
    libstdc++.so* | libgcc_s.so*) return 0 ;;
    libcuda.so* | libcudart.so* | libnvidia-* | libnvrtc* | libnvJitLink*) return 0 ;;
  esac
  case $2 in /usr/local/cuda/* | /usr/local/cuda-*/*) return 0 ;; esac
  return 1
}

# --- prepare (build machine) ---------------------------------------------------
prepare() {
  local bd=$1 b name arrow path rest missing=0
  [ -d "$bd" ] || die "no build folder $bd"
  [ -x "$bd/cli/capsim" ] || die "$bd/cli/capsim is not built (cmake --build $(relpath "$bd") --target capsim)"
  local bins=(cli/capsim) t
  for t in "${cuda_tests[@]}"; do
    if [ -x "$bd/tests/$t" ]; then bins+=("tests/$t"); else echo "prepare: $(relpath "$bd")/tests/$t is not built; left out"; fi
  done

  rm -rf -- "$bd/gpu-bin" "$bd/gpu-libs"
  mkdir -p -- "$bd/gpu-bin" "$bd/gpu-libs" || die "cannot create $bd/gpu-bin, $bd/gpu-libs"

  local -A copied=()
  for b in "${bins[@]}"; do
    while read -r name arrow path rest; do
      [ "$arrow" = "=>" ] || continue
      if [ "$path" = "not" ]; then
        echo "prepare: warning: $b needs $name, which ldd cannot find here"
        missing=1
        continue
      fi
      excluded_lib "$name" "$path" && continue
      [ -n "${copied[$name]:-}" ] && continue
      cp -L -- "$path" "$bd/gpu-libs/$name" || die "cannot copy $path"
      copied[$name]=$path
    done < <(ldd "$bd/$b")
  done

  for b in "${bins[@]}"; do
    local dst
    dst="$bd/gpu-bin/$(basename "$b")"
    if ! strip -o "$dst" "$bd/$b"; then
      echo "prepare: warning: strip failed for $b; copying it unstripped"
      cp -L -- "$bd/$b" "$dst" || die "cannot copy $bd/$b"
    fi
    chmod +x -- "$dst"
  done

  {
    echo "prepared: $(date -u '+%F %T') UTC on $(hostname 2>/dev/null || echo '?')"
    if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
      local changed
      changed=$(git -C "$root" --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null | wc -l)
      echo "source: commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null), $changed tracked files changed"
    fi
    for b in "${bins[@]}"; do echo "binary: $b built $(date -u -r "$bd/$b" '+%F %T') UTC"; done
    for name in "${!copied[@]}"; do echo "lib: $name from ${copied[$name]}"; done | sort
  } > "$bd/gpu-bin/BUILD_INFO"

  echo "prepare: libraries copied into $(relpath "$bd")/gpu-libs:"
  for name in $(printf '%s\n' "${!copied[@]}" | sort); do
    printf '  %-24s %10s  (from %s)\n' "$name" "$(mib "$(bytes_of "$bd/gpu-libs/$name")")" "${copied[$name]}"
  done
  [ ${#copied[@]} -gt 0 ] || echo "  (none needed)"
  echo "prepare: stripped binaries in $(relpath "$bd")/gpu-bin:"
  for b in "${bins[@]}"; do
    printf '  %-28s %10s  (unstripped %s)\n' "$(basename "$b")" \
      "$(mib "$(bytes_of "$bd/gpu-bin/$(basename "$b")")")" "$(mib "$(bytes_of "$bd/$b")")"
  done

  local unstripped carried limit=$((60 * 1048576))
  unstripped=$(bytes_of "${bins[@]/#/$bd/}" "$bd/gpu-libs")
  carried=$(bytes_of "$bd/gpu-bin" "$bd/gpu-libs")
  echo "prepare: gpu-libs $(mib "$(bytes_of "$bd/gpu-libs")"), gpu-bin $(mib "$(bytes_of "$bd/gpu-bin")"), carried in all $(mib "$carried")"
  if [ "$unstripped" -gt "$limit" ]; then
    echo "prepare: the unstripped binaries with gpu-libs come to $(mib "$unstripped"), over the ~60 MiB a carry allows; carry gpu-bin instead"
  fi
  if [ "$carried" -gt "$limit" ]; then
    echo "prepare: WARNING: gpu-bin + gpu-libs come to $(mib "$carried"), over ~60 MiB: the carry (64 MiB in all) may not fit"
  fi
  echo "prepare: carry these to the GPU machine, then run scripts/gpu-check.sh there:"
  echo "  [\"$(relpath "$bd")/gpu-bin\", \"$(relpath "$bd")/gpu-libs\"]"
  [ "$missing" -eq 0 ] || echo "prepare: warning: some libraries were not found here (see above)"
  return 0
}

# --- arguments -------------------------------------------------------------------
case ${1:-} in
  -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --prepare)
    [ $# -le 2 ] || die "usage: $0 --prepare [BUILD_DIR]"
    prepare "$(abspath "${2:-build/default}")"
    exit $?
    ;;
  -*) die "unknown option $1 (usage: $0 [--prepare [BUILD_DIR]] | [OUTDIR])" ;;
esac
[ $# -le 1 ] || die "usage: $0 [OUTDIR]"

# --- the run (GPU machine) -------------------------------------------------------
outdir=$(abspath "${1:-build/gpu-check}")
bd=$(abspath "${CAPSIM_BUILD_DIR:-build/default}")
backend=${GPU_CHECK_BACKEND:-cuda}
case $backend in cuda | host) ;; *) die "GPU_CHECK_BACKEND must be cuda or host" ;; esac
budget_s=${GPU_CHECK_BUDGET_S:-460}  # the whole run; each step's timeout is cut to fit
record_guard_s=${GPU_CHECK_RECORD_GUARD_S:-420}  # no new recording starts after this

if [ -e "$outdir" ] && [ ! -e "$outdir/.gpu-check" ] && [ -n "$(ls -A -- "$outdir" 2>/dev/null)" ]; then
  die "$outdir exists, is not empty and was not written by gpu-check; give another OUTDIR"
fi
mkdir -p -- "$outdir" || die "cannot create $outdir"
rm -rf -- "$outdir/traces" "$outdir/cpu" "$outdir/logs" "$outdir/check-failures"
rm -f -- "$outdir"/*.log "$outdir/check.xml" "$outdir/summary.md" "$outdir/summary.txt" "$outdir/device.txt"
mkdir -p -- "$outdir/traces" "$outdir/cpu" "$outdir/logs"
touch -- "$outdir/.gpu-check"

now() { if [ -n "${EPOCHREALTIME:-}" ]; then printf '%s\n' "$EPOCHREALTIME"; else date +%s.%N; fi; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# tlimit WANT: WANT seconds, or what is left of the budget if less; at least 1
# (`timeout 0` would mean no limit at all).
tlimit() { local left=$((budget_s - SECONDS)); [ "$left" -lt 1 ] && left=1; [ "$left" -lt "$1" ] && echo "$left" || echo "$1"; }
first_line() { grep -m1 -v '^[[:space:]]*$' -- "$1" 2>/dev/null | cut -c1-160; }

rows_item=() rows_result=() rows_detail=() rows_status=()
# row ITEM RESULT DETAIL STATUS; STATUS: ok, fail, nogpu (not checked: no GPU), info
row() { rows_item+=("$1"); rows_result+=("$2"); rows_detail+=("$3"); rows_status+=("$4"); }

gpu=unknown   # yes: nvidia-smi names a GPU or a device test ran; no: skipped for want of one
gpu_name="" gpu_driver=""
bin_source="" build_info=""

print_table() {
  local n=${#rows_item[@]} i wi=4 wr=6
  for ((i = 0; i < n; i++)); do
    [ ${#rows_item[i]} -gt "$wi" ] && wi=${#rows_item[i]}
    [ ${#rows_result[i]} -gt "$wr" ] && wr=${#rows_result[i]}
  done
  printf "%-${wi}s | %-${wr}s | %s\n" item result detail
  printf '%s-+-%s-+-%s\n' "$(printf '%*s' "$wi" '' | tr ' ' -)" "$(printf '%*s' "$wr" '' | tr ' ' -)" "------"
  for ((i = 0; i < n; i++)); do
    printf "%-${wi}s | %-${wr}s | %s\n" "${rows_item[i]}" "${rows_result[i]}" "${rows_detail[i]}" | sed 's/ *$//'
  done
}

md_cell() { local s=${1//|/\\|}; printf '%s' "${s//\`/\'}"; }

finish() {
  local i failed=0 nogpu=0 verdict code
  for i in "${!rows_status[@]}"; do
    case ${rows_status[i]} in fail) failed=$((failed + 1)) ;; nogpu) nogpu=$((nogpu + 1)) ;; esac
  done
  if [ "$nogpu" -gt 0 ] && [ "$gpu" != yes ]; then
    verdict="no GPU: nothing checked"; code=1
    [ "$failed" -gt 0 ] && verdict="$verdict; besides, $failed item(s) failed or were not run"
  elif [ "$failed" -gt 0 ]; then
    verdict="FAILED: $failed item(s) failed or were not run"; code=1
  else
    verdict="ok: every item passed"; code=0
  fi
  [ "$backend" = cuda ] || verdict="$verdict (dry run with --backend $backend, not a GPU check)"
  local took=$SECONDS
  {
    echo
    print_table
    echo
    echo "gpu-check: $verdict ($took s; outputs in $(relpath "$outdir"))"
  } | tee "$outdir/summary.txt"
  {
    echo "### $(date -u +%F): scripts/gpu-check.sh, ${gpu_name:-no GPU}, driver ${gpu_driver:-none}"
    echo
    echo "- Binaries: $bin_source${build_info:+ ($build_info)}; backend \`$backend\`."
    echo "- Wall time: $took s. Verdict: $verdict."
    echo
    echo "| item | result | detail |"
    echo "|---|---|---|"
    for i in "${!rows_item[@]}"; do
      echo "| $(md_cell "${rows_item[i]}") | $(md_cell "${rows_result[i]}") | $(md_cell "${rows_detail[i]}") |"
    done
  } > "$outdir/summary.md"
  exit "$code"
}

# 1. Binaries: carried stripped copies, the build folder, or a build here.
libdir="" carried_libs="" lacking=""
declare -A testbin=()
if [ -x "$bd/gpu-bin/capsim" ]; then
  bindir=$bd/gpu-bin
  capsim=$bindir/capsim
  for t in "${cuda_tests[@]}"; do testbin[$t]=$bindir/$t; done
  [ -d "$bd/gpu-libs" ] && carried_libs=$bd/gpu-libs
  bin_source="$(relpath "$bindir")"
  [ -f "$bindir/BUILD_INFO" ] && build_info=$(grep -m1 '^source:' "$bindir/BUILD_INFO" | sed 's/^source: //')
  [ -f "$bindir/BUILD_INFO" ] && build_info="${build_info:+$build_info, }$(grep -m1 '^prepared:' "$bindir/BUILD_INFO" | sed 's/^prepared: /prepared /')"
else
  if [ ! -x "$bd/cli/capsim" ]; then
    echo "gpu-check: no binaries in $(relpath "$bd"); building them (cmake --preset default)"
    if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then PATH=/usr/local/cuda/bin:$PATH; fi
    start=$(now)
    ok=0
    if [ "$bd" = "$root/build/default" ]; then
      timeout -k 5 "$(tlimit 120)" cmake --preset default > "$outdir/build.log" 2>&1 && ok=1
    else
      timeout -k 5 "$(tlimit 120)" cmake -S "$root" -B "$bd" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$outdir/build.log" 2>&1 && ok=1
    fi
    if [ "$ok" = 1 ]; then
      targets=(capsim)
      for t in "${cuda_tests[@]}"; do
        grep -q "^build $t: phony" "$bd/build.ninja" 2>/dev/null && targets+=("$t")
      done
      timeout -k 5 "$(tlimit 300)" cmake --build "$bd" -j16 --target "${targets[@]}" >> "$outdir/build.log" 2>&1 || ok=0
    fi
    if [ "$ok" != 1 ] || [ ! -x "$bd/cli/capsim" ]; then
      row build FAIL "$(grep -m1 -i -E 'error|could not|not found' "$outdir/build.log" | cut -c1-140); see build.log" fail
      finish
    fi
    row build ok "$(since "$start") s, targets: ${targets[*]}" info
  fi
  capsim=$bd/cli/capsim
  for t in "${cuda_tests[@]}"; do testbin[$t]=$bd/tests/$t; done
  bin_source="$(relpath "$bd")"
fi
# Carried libraries: only those this machine lacks. The system's own copy wins
# where it has one: a copy from the build machine may need a newer glibc.
runenv=()
used_libs=()
if [ -n "$carried_libs" ]; then
  libdir=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-libs.XXXXXX") || die "mktemp failed"
  trap 'rm -rf -- "$libdir"' EXIT
  for _ in 1 2 3 4 5 6 7 8; do
    added=0
    for name in $(for b in "$capsim" "${testbin[@]}"; do [ -x "$b" ] && LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$b" 2>/dev/null; done |
      awk '$2 == "=>" && $3 == "not" { print $1 }' | sort -u); do
      if [ -f "$carried_libs/$name" ] && [ ! -e "$libdir/$name" ]; then
        ln -s -- "$carried_libs/$name" "$libdir/$name" && used_libs+=("$name") && added=1
      fi
    done
    [ "$added" = 1 ] || break
  done
  [ ${#used_libs[@]} -gt 0 ] && runenv=(env "LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  lacking=$(for b in "$capsim" "${testbin[@]}"; do [ -x "$b" ] && LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$b" 2>/dev/null; done |
    awk '$2 == "=>" && $3 == "not" { print $1 }' | sort -u | paste -sd' ')
fi
# run_timed SECONDS CMD...: our binaries, with the carried libraries when there are some.
run_timed() { local t=$1; shift; timeout -k 5 "$t" ${runenv[@]+"${runenv[@]}"} "$@"; }

echo "gpu-check: binaries from $bin_source; outputs in $(relpath "$outdir")"
if ! version=$(run_timed 20 "$capsim" version 2>&1); then
  row capsim FAIL "cannot start: $(printf '%s\n' "$version" | head -1 | cut -c1-140)" fail
  missing=$(${runenv[@]+"${runenv[@]}"} ldd "$capsim" 2>/dev/null | awk '/not found/ { print $1 }' | paste -sd' ')
  [ -n "$missing" ] && row "capsim libraries" missing "$missing" fail
  finish
fi

# 2. Device identity.
if command -v nvidia-smi >/dev/null 2>&1; then
  smi=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)
  smi_rc=$?
  printf '%s\n' "$smi" > "$outdir/device.txt"
  if [ "$smi_rc" -eq 0 ] && [ -n "$smi" ]; then
    IFS=, read -r gpu_name gpu_driver gpu_mem <<< "$(printf '%s\n' "$smi" | head -1)"
    gpu_name=$(echo "$gpu_name" | xargs) gpu_driver=$(echo "$gpu_driver" | xargs) gpu_mem=$(echo "$gpu_mem" | xargs)
    count=$(printf '%s\n' "$smi" | grep -c .)
    gpu=yes
    row device "$gpu_name" "driver $gpu_driver, $gpu_mem${count:+, $count GPU(s) visible}" info
  else
    row device "none" "nvidia-smi failed: $(printf '%s\n' "$smi" | head -1 | cut -c1-120)" info
  fi
else
  echo "nvidia-smi: not found" > "$outdir/device.txt"
  row device "unknown" "no nvidia-smi on this machine" info
fi
row capsim "$(printf '%s\n' "$version" | head -1)" "$bin_source" info
if [ -n "$carried_libs" ]; then
  if [ ${#used_libs[@]} -gt 0 ]; then
    row libraries "carried: ${#used_libs[@]}" "$(printf '%s\n' "${used_libs[@]}" | sort | paste -sd' ')" info
  else
    row libraries "the system's" "none of $(relpath "$carried_libs") needed" info
  fi
  [ -n "$lacking" ] && row "libraries" "missing" "neither here nor carried: $lacking" fail
fi

# 3. The CUDA test executables.
for i in "${!cuda_tests[@]}"; do
  t=${cuda_tests[i]} name=${cuda_test_names[i]}
  bin=${testbin[$t]}
  if [ ! -x "$bin" ]; then
    row "$name" "not built" "$(relpath "$bin") is missing" fail
    continue
  fi
  lim=$(tlimit 120)
  if [ "$lim" -lt 5 ]; then row "$name" "not run (time)" "" fail; continue; fi
  start=$(now)
  run_timed "$lim" "$bin" > "$outdir/$t.log" 2>&1
  rc=$?
  took=$(since "$start")
  counts=$(grep -o -E 'test cases: *[0-9]+ *\| *[0-9]+ passed *\| *[0-9]+ failed' "$outdir/$t.log" | tail -1 |
    sed -E 's/test cases: *([0-9]+) *\| *([0-9]+) passed *\| *([0-9]+) failed/\1 test cases, \3 failed/')
  case $rc in
    0) gpu=yes; row "$name" pass "$took s${counts:+, $counts}" ok ;;
    77)
      if [ "$gpu" = yes ]; then
        row "$name" "FAIL (skipped)" "skipped with a GPU present: $(first_line "$outdir/$t.log")" fail
      else
        gpu=no; row "$name" "skip (no GPU)" "$(first_line "$outdir/$t.log")" nogpu
      fi
      ;;
    124 | 137) row "$name" "FAIL (timeout)" "killed after $lim s; see $t.log" fail ;;
    *) row "$name" "FAIL (exit $rc)" "$took s${counts:+, $counts}; see $t.log" fail ;;
  esac
done

# 4. The property catalogue's reference properties against the device.
regress=()
[ -d "$root/properties/regressions" ] && regress=(--regressions "$root/properties/regressions")
lim=$(tlimit 240)
if [ "$lim" -lt 5 ]; then
  row "check reference.*" "not run (time)" "" fail
else
  start=$(now)
  run_timed "$lim" "$capsim" check --backend "$backend" --property 'reference.*' --seed 1 --cases 200 \
    --no-progress ${regress[@]+"${regress[@]}"} --junit "$outdir/check.xml" \
    --save-failures "$outdir/check-failures" > "$outdir/check.log" 2>&1
  rc=$?
  took=$(since "$start")
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    row "check reference.*" "FAIL (timeout)" "killed after $lim s; see check.log" fail
  elif grep -q 'no CUDA device' "$outdir/check.log" && [ "$rc" -eq 2 ]; then
    if [ "$gpu" = yes ]; then
      row "check reference.*" "FAIL (no device)" "$(first_line "$outdir/check.log")" fail
    else
      gpu=no; row "check reference.*" "no GPU" "$(first_line "$outdir/check.log")" nogpu
    fi
  else
    parsed=0
    while read -r verdict prop ncases _; do
      parsed=1
      if [ "$verdict" = pass ]; then
        row "check $prop" pass "$ncases cases, seed 1" ok
      else
        row "check $prop" FAIL "$ncases cases, seed 1; see check.log, check-failures/" fail
      fi
    done < <(grep -E '^  (pass|FAIL)  [^ ]' "$outdir/check.log" | grep -v '  regression ' | awk '{ print $1, $2, $3 }')
    ctl=$(grep -m1 -o -E 'controls: [0-9]+ caught, [0-9]+ not caught' "$outdir/check.log")
    reg=$(grep -m1 -o -E 'regressions: [0-9]+ passed, [0-9]+ failed' "$outdir/check.log")
    if [ "$rc" -eq 0 ] && [ "$parsed" = 1 ]; then
      row "check controls" pass "${ctl:-?}${reg:+; $reg}; $took s in all" ok
    elif [ "$rc" -eq 1 ] && [ "$parsed" = 1 ]; then
      row "check controls" "see detail" "${ctl:-?}${reg:+; $reg}; exit 1, see check.log" fail
    else
      row "check reference.*" "FAIL (exit $rc)" "$(grep -m1 -E 'error|FAIL|NOT CAUGHT' "$outdir/check.log" | cut -c1-140)" fail
    fi
  fi
fi

# 5. Every built-in scenario recorded beside the device, replayed through the model.
# norm_replay FILE LINE DEVICE_EVENTS: the replay's first line without the path,
# the line number, or the device events (which the CPU-recorded trace lacks).
norm_replay() {
  local line=${2#"$1"} re_line='^:[0-9]+(:.*)$' re_events='^(.* )([0-9]+)( events match.*)$'
  [[ $line =~ $re_line ]] && line=${BASH_REMATCH[1]}
  [[ $line =~ $re_events ]] && line="${BASH_REMATCH[1]}$((BASH_REMATCH[2] - $3))${BASH_REMATCH[3]}"
  printf '%s\n' "$line"
}
# replay_first FILE: sets r_rc and r_line (the replay's first output line).
replay_first() {
  run_timed "$(tlimit 30)" "$capsim" replay "$1" > "$2" 2>&1
  r_rc=$?
  r_line=$(head -1 -- "$2")
}

if ! scenarios=$(run_timed 30 "$capsim" scenario --list 2>"$outdir/logs/scenario-list.log" | awk '{ print $1 }') ||
  [ -z "$scenarios" ]; then
  row "record *" FAIL "capsim scenario --list failed; see logs/scenario-list.log" fail
  finish
fi
n_scen=$(printf '%s\n' "$scenarios" | grep -c .)
nogpu_records=""
for s in $scenarios; do
  item="record $s"
  if [ -n "$nogpu_records" ]; then continue; fi
  if [ "$SECONDS" -gt "$record_guard_s" ] || [ "$(tlimit 30)" -lt 5 ]; then
    row "$item" "not run (time)" "the run passed $record_guard_s s" fail
    continue
  fi
  trace=$outdir/traces/$s.jsonl
  rlog=$outdir/logs/$s.record.log
  run_timed "$(tlimit 30)" "$capsim" record --backend "$backend" "$s" -o "$trace" > "$rlog" 2>&1
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    row "$item" "FAIL (timeout)" "see logs/$s.record.log" fail
    continue
  fi
  if [ "$rc" -eq 2 ] && grep -q 'no CUDA device' "$rlog"; then
    if [ "$gpu" = yes ]; then
      row "$item" "FAIL (no device)" "$(first_line "$rlog")" fail
    else
      gpu=no nogpu_records=1
      row "record * ($n_scen scenarios)" "no GPU" "$(first_line "$rlog"); none recorded" nogpu
    fi
    continue
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    row "$item" "FAIL (error, exit $rc)" "$(grep -m1 -v '^recorded ' "$rlog" | cut -c1-140)" fail
    continue
  fi
  devices=0
  [ -f "$trace" ] && devices=$(grep -c '"event":"device"' "$trace")
  if [ "$rc" -eq 1 ]; then
    row "$item" "FAIL (GPU disagrees)" "$(grep -m1 -v '^recorded ' "$rlog" | cut -c1-120); see logs/$s.record.log" fail
    continue
  fi
  # The model's own trace of the scenario, for the replay verdict to compare with.
  if ! run_timed "$(tlimit 30)" "$capsim" record "$s" -o "$outdir/cpu/$s.jsonl" > "$outdir/logs/$s.cpu-record.log" 2>&1; then
    row "$item" "FAIL (model record)" "capsim record $s failed; see logs/$s.cpu-record.log" fail
    continue
  fi
  replay_first "$trace" "$outdir/logs/$s.replay.log"
  dev_rc=$r_rc dev_line=$(norm_replay "$trace" "$r_line" "$devices")
  replay_first "$outdir/cpu/$s.jsonl" "$outdir/logs/$s.cpu-replay.log"
  cpu_rc=$r_rc cpu_line=$(norm_replay "$outdir/cpu/$s.jsonl" "$r_line" 0)
  if [ "$dev_rc" -eq "$cpu_rc" ] && [ "$dev_line" = "$cpu_line" ] && [ "$dev_rc" -le 1 ]; then
    extra=""
    [ "$dev_rc" -eq 1 ] && extra=", replay exits 1 as the model's does"
    row "$item" "recorded, replays as the model" "$devices device event$([ "$devices" -eq 1 ] || echo s)$extra" ok
  else
    row "$item" "FAIL (replay differs)" "replay exit $dev_rc vs model's $cpu_rc: $(printf '%s' "$dev_line" | cut -c1-100)" fail
  fi
done

# 6. Real PyTorch: the cudagraph-tree programs of recorder, recorded on this
# GPU when its python imports torch, in what is left of the budget, then
# replayed through the model (informative: docs/fidelity.md says what to expect;
# docs/gpu-runs.md, "What only a GPU can settle", which prediction each settles).
torch_left=$(tlimit 300)
# The python of steps 6 and 7: $CAPSIM_PYTHON, else the pinned venv, else python3.
torch_py=${CAPSIM_PYTHON:-python3}
[ -x build/torch-venv/bin/python ] && [ -z "${CAPSIM_PYTHON:-}" ] && torch_py=build/torch-venv/bin/python
if [ "$torch_left" -lt 60 ]; then
  row "pytorch cudagraphs" "not run (time)" "$torch_left s left of the budget" info
elif ! timeout 60 "${CAPSIM_PYTHON:-python3}" -c 'import torch' >/dev/null 2>&1 &&
  [ ! -x build/torch-venv/bin/python ]; then
  row "pytorch cudagraphs" "not run" "no python that imports torch" info
else
  timeout -k 5 "$torch_left" scripts/record-torch-cudagraphs.sh "$outdir/torch" > "$outdir/logs/torch.log" 2>&1
  trc=$?
  if [ "$trc" -eq 77 ]; then
    row "pytorch cudagraphs" "no GPU" "$(first_line "$outdir/logs/torch.log")" nogpu
  else
    while IFS= read -r line; do
      row "pytorch $(printf '%s' "$line" | cut -d: -f1)" "$(printf '%s' "$line" | cut -d: -f2- | cut -c2-60)" "" info
    done < <(grep -v '^#' "$outdir/torch/summary.txt" 2>/dev/null)
    # A plain script recorded unchanged by the launcher (`python -m
    # capsim_recorder run -- SCRIPT`, recorder/capsim_recorder/launcher/command.py):
    # the same trees seen through record(cudagraphs=True) instead of the
    # program API.
    launch_left=$(tlimit 120)
    if [ "$launch_left" -lt 45 ]; then
      row "pytorch launcher" "not run (time)" "$launch_left s left of the budget" info
    else
      PYTHONPATH="$root/recorder" timeout -k 5 "$launch_left" "$torch_py" -m capsim_recorder run \
        -o "$outdir/torch/reduce_overhead_train.jsonl" --cudagraphs -- \
        recorder/examples/reduce_overhead_train.py --steps 4 > "$outdir/logs/torch-launcher.log" 2>&1
      row "pytorch launcher" "exit $?" "$(grep -m1 'capsim_recorder:' "$outdir/logs/torch-launcher.log" | cut -c1-100)" info
    fi
    for t in "$outdir"/torch/*.jsonl; do
      [ -f "$t" ] || continue
      run_timed "$(tlimit 30)" "$capsim" replay "$t" > "$outdir/logs/torch-$(basename "$t" .jsonl).replay.log" 2>&1
      row "replay torch/$(basename "$t")" "exit $?" "$(first_line "$outdir/logs/torch-$(basename "$t" .jsonl).replay.log" | sed 's|^.*/||' | cut -c1-100)" info
    done
  fi
fi

# 7. How the tree sees a compiled-autograd backward (its CompilationMode, and
# whether loss.backward() is a new invocation): capsim's reading of the
# sources, which this settles (docs/compiled-autograd.md, "In a program").
probe_left=$(tlimit 120)
if [ "$probe_left" -lt 30 ]; then
  row "ca tree mode" "not run (time)" "$probe_left s left of the budget" info
else
  timeout -k 5 "$probe_left" "$torch_py" scripts/probe-ca-tree-mode.py > "$outdir/ca-tree-mode.txt" 2>&1
  prc=$?
  case $prc in
    0) row "ca tree mode" "probed" "$(grep -m3 '^function' "$outdir/ca-tree-mode.txt" | paste -sd';' | cut -c1-120); see ca-tree-mode.txt" info ;;
    77) row "ca tree mode" "not run" "$(first_line "$outdir/ca-tree-mode.txt")" info ;;
    *) row "ca tree mode" "exit $prc" "see ca-tree-mode.txt" info ;;
  esac
fi

finish
