#!/usr/bin/env bash
# Regenerates traces/corpus/: one trace per built-in scenario, recorded by the
# model, then the divergence demos derived from them. Run it in the commit that
# changes the model on purpose; the corpus test fails until you do.
#   scripts/record-corpus.sh [path/to/capsim]
set -euo pipefail
cd "$(dirname "$0")/.."
capsim=${1:-build/default/cli/capsim}
rm -f traces/corpus/*.jsonl
for scenario in $("$capsim" scenario --list | awk '{print $1}'); do
  "$capsim" record "$scenario" -o "traces/corpus/$scenario.jsonl" >/dev/null
done
python3 scripts/make-diverging-demos.py
echo "recorded $(ls traces/corpus/*.jsonl | wc -l) traces into traces/corpus/"
