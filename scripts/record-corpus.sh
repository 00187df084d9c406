#!/usr/bin/env bash
# Regenerates traces/corpus/: one trace per built-in scenario, recorded by the
# model, then the divergence demos derived from them. Run it in the commit that
# changes the model on purpose; the corpus test fails until you do.
#   scripts/record-corpus.sh [path/to/capsim]
set -euo pipefail
cd "$(dirname "$0")/.."
capsim=${1:-build/default/cli/capsim}
rm -f traces/corpus/*.jsonl traces/corpus/hazards/*.jsonl
for scenario in $("$capsim" scenario --list | awk '{print $1}'); do
  # The two whose replays report violations on purpose (traces/corpus/README.md).
  case $scenario in
    plain_api_param_reassigned | ca_basic_legacy) dir=traces/corpus/hazards ;;
    *) dir=traces/corpus ;;
  esac
  "$capsim" record "$scenario" -o "$dir/$scenario.jsonl" >/dev/null
done
python3 scripts/make-diverging-demos.py
echo "recorded $(ls traces/corpus/*.jsonl traces/corpus/hazards/*.jsonl | wc -l) traces into traces/corpus/"
