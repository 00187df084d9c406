#!/usr/bin/env bash
# Regenerates data/corpus/: one trace per built-in scenario, recorded by the
# model, then the divergence demos derived from them. Run it in the commit that
# changes the model on purpose; the corpus test fails until you do.
#   scripts/record-corpus.sh [path/to/capsim]
set -euo pipefail
cd "$(dirname "$0")/.."
capsim=${1:-build/default/cli/capsim}
rm -f data/corpus/*.jsonl data/corpus/hazards/*.jsonl
for scenario in $("$capsim" scenario --list | awk '{print $1}'); do
  # The two whose replays report violations on purpose (data/corpus/README.md).
  case $scenario in
    plain_api_param_reassigned | ca_basic_legacy) dir=data/corpus/hazards ;;
    *) dir=data/corpus ;;
  esac
  "$capsim" record "$scenario" -o "$dir/$scenario.jsonl" >/dev/null
done
python3 scripts/make-diverging-demos.py
echo "recorded $(ls data/corpus/*.jsonl data/corpus/hazards/*.jsonl | wc -l) traces into data/corpus/"
