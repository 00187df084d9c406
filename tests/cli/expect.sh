#!/usr/bin/env bash
# expect.sh RC PATTERN -- COMMAND...: runs COMMAND and passes when it exits with
# RC and its output (stdout and stderr together) matches the extended regex
# PATTERN. With RC 2 it also requires stderr to be exactly one line.
set -u
want_rc=$1 pattern=$2
shift 2
[ "$1" = "--" ] && shift
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
rc=$?
if [ "$rc" != "$want_rc" ]; then
  echo "expected exit code $want_rc, got $rc"; cat "$out" "$err"; exit 1
fi
if ! cat "$out" "$err" | grep -Eq -- "$pattern"; then
  echo "output does not match /$pattern/:"; cat "$out" "$err"; exit 1
fi
if [ "$want_rc" = 2 ] && [ "$(wc -l <"$err")" != 1 ]; then
  echo "expected exactly one line on stderr:"; cat "$err"; exit 1
fi
exit 0
