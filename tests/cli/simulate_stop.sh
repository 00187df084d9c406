#!/usr/bin/env bash
# A prediction ends where a real run dies (docs/explain.md, "A prediction
# ends where a real run dies"): two outputs kept across calls and read later
# (the warmup's and the recording's) raise E1 twice under --keep-going, but the run ends at the first by
# default, in simulate's listing, its written trace (which replays) and
# explain's summary.
#   simulate_stop.sh CAPSIM
set -eu
capsim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
p=$work/kept.jsonl
cat > "$p" <<'JSONL'
{"type":"header","name":"two_kept_outputs"}
{"type":"function","function":"f","mode":"inference","inputs":["x","w"],"ops":[{"op":"mul","args":[0,1]}],"outputs":[2],"stack_traces":["File \"train.py\", line 7, in step\n    y = x * w"]}
{"type":"action","action":"new_tensor","name":"w","sizes":[4],"parameter":true}
{"type":"action","action":"new_tensor","name":"x","sizes":[4]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y1"]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y2"]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y3"]}
{"type":"action","action":"call","function":"f","args":["x","w"],"outputs":["y4"]}
{"type":"action","action":"read","name":"y1"}
{"type":"action","action":"read","name":"y2"}
{"type":"action","action":"read","name":"y4"}
JSONL
fail() { echo "simulate_stop: $*"; exit 1; }
"$capsim" simulate "$p" -o "$work/stop.jsonl" > "$work/stop.txt"
grep -q "^    -- a real run ends here: nothing catches the RuntimeError; actions 7 to 8 are not run" \
  "$work/stop.txt" || fail "no marker after the first E1"
grep -q "1 errors$" "$work/stop.txt" || fail "more than the first error"
# E1 quotes the overwritten output's source line, as PyTorch's does.
grep -q 'Stack trace: File \\"train.py\\", line 7, in step\\n    y = x \* w. To prevent' "$work/stop.txt" ||
  fail "E1 does not quote the output's stack trace"
grep -q "^stopped after action 6 of 9: the first error" "$work/stop.txt" || fail "no stop line"
grep -q '^\[7\]' "$work/stop.txt" && fail "listed an action past the raise"
[ "$(grep -c '"type":"action"' "$work/stop.jsonl")" = 7 ] || fail "the trace holds unrun actions"
"$capsim" replay "$work/stop.jsonl" | grep -q ": ok," || fail "the stopped trace does not replay"
"$capsim" simulate "$p" --keep-going > "$work/on.txt"
grep -q "2 errors$" "$work/on.txt" || fail "--keep-going did not reach the second E1"
grep -q "what follows is beyond it" "$work/on.txt" || fail "--keep-going has no marker"
"$capsim" explain "$p" | tail -1 | grep -q "the run ends at action 6's RuntimeError, as a real run does (nothing catches it): actions 7 to 8 were never reached" ||
  fail "explain does not say where the run ends"
"$capsim" explain "$p" --keep-going | grep -q "^action 7: .*(beyond a real run, which dies at action 6)" ||
  fail "explain --keep-going does not mark the later E1"
echo "simulate_stop: ok"
