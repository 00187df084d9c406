#!/usr/bin/env bash
# deterministic.sh COMMAND...: runs COMMAND twice and passes when both runs
# exit 0 with byte-identical stdout (docs/architecture.md, "Determinism", rule 3).
set -u
a=$("$@") || { echo "first run failed"; exit 1; }
b=$("$@") || { echo "second run failed"; exit 1; }
if [ "$a" != "$b" ]; then
  echo "two runs differ:"; diff <(echo "$a") <(echo "$b"); exit 1
fi
[ -n "$a" ] || { echo "no output"; exit 1; }
exit 0
