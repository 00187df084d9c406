#!/usr/bin/env bash
# seed_matters.sh COMMAND...: runs COMMAND with --seed 1 and with --seed 2 and
# passes when both succeed and their outputs differ: the seed must reach the
# job, not be parsed and dropped.
set -u
a=$("$@" --seed 1) || { echo "run with --seed 1 failed"; exit 1; }
b=$("$@" --seed 2) || { echo "run with --seed 2 failed"; exit 1; }
if [ "$a" = "$b" ]; then
  echo "--seed 1 and --seed 2 gave the same output:"; echo "$a"; exit 1
fi
exit 0
