#!/usr/bin/env bash
# capsim explain --html: the page is self-contained (no script, no link out),
# parses as HTML, holds the drawing as inline SVG, the timeline and the
# explanations (and, with --what-if, the what-if table), a chart of each
# function's calls (the pool's bytes, the copies, the decisions marked; many
# calls folded into columns), and is the same bytes twice. Then, when a
# headless Chromium is installed, the page is opened in it: a screenshot
# (the page must load and draw) and its DOM (the charts' SVG survives the
# browser's parse); without Chromium that part is skipped with a message.
#   explain_html.sh CAPSIM
set -euo pipefail
capsim=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v python3 >/dev/null || exit 77
trace=$root/data/corpus/rerecord_if_static_input_address_changed.jsonl
"$capsim" explain "$trace" --html "$work/a.html" > /dev/null
"$capsim" explain "$trace" --html "$work/b.html" > /dev/null
cmp "$work/a.html" "$work/b.html"
python3 - "$work/a.html" <<'PY'
import html.parser, sys
text = open(sys.argv[1], encoding="utf-8").read()
class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.outside = []
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.outside.append(v)
p = Page()
p.feed(text)
assert "svg" in p.tags, "no inline SVG"
assert "script" not in p.tags, "a script in the page"
assert not p.outside, f"links out of the page: {p.outside}"
for want in ("re-recorded: a static input moved", "timeline", "It last got storage at action 10"):
    assert want in text, f"missing: {want}"
print(f"page: {len(text)} bytes, {p.tags.count('section')} explanations")
PY
# The calls' charts: one per function, each decision marked on its call
# with a tooltip, the copies as bars, the pool's line.
grep -q "<h2>calls</h2>" "$work/a.html"
grep -q "<h3><code>foo</code></h3>" "$work/a.html"
grep -q "<p>6 calls: 1 recorded, 1 re-recorded, 0 eager, 0 raised; at most 8 B copied in" \
  "$work/a.html"
grep -q "<title>call 2 (action 6): recorded</title>" "$work/a.html"
grep -q "<title>call 4 (action 12): re-recorded</title>" "$work/a.html"
grep -q "<title>call 3 (action 8): 8 B copied in</title>" "$work/a.html"
grep -q "pool live bytes after the call (capsim&apos;s model)" "$work/a.html"
grep -q "<polyline points=" "$work/a.html"
# 900 calls fold into 300 columns of 3, each bar a column.
python3 - "$work/many.jsonl" <<'PY'
import sys
lines = ['{"type":"header","name":"many"}',
         '{"type":"function","function":"step","mode":"inference","inputs":["x","w"],'
         '"static_input_idxs":[1],"ops":[{"op":"mul","args":[0,1]}],"outputs":[2]}',
         '{"type":"action","action":"new_tensor","name":"w","sizes":[64],"parameter":true}']
for i in range(900):
    if i % 3 == 0:
        lines.append('{"type":"action","action":"new_tensor","name":"x","sizes":[64]}')
    lines.append('{"type":"action","action":"call","function":"step","args":["x","w"],"outputs":["y"]}')
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
"$capsim" explain "$work/many.jsonl" --html "$work/many.html" > /dev/null
grep -q "<p>900 calls: 1 recorded, 0 re-recorded" "$work/many.html"
grep -q ">3 calls per column</text>" "$work/many.html"
test "$(grep -c '<rect .*class=copy>' "$work/many.html")" -le 400
# With --what-if, the page gets the what-if table (#138949: clone ends W1).
"$capsim" explain "$root/data/casebook/issue_138949.jsonl" --what-if auto --html "$work/w.html" \
  > "$work/w.txt"
grep -q "<h2>what if</h2>" "$work/w.html"
grep -q "<code>clone=obs</code></td><td>better</td><td>0 &rarr; 1</td>" "$work/w.html"
grep -q "what-if clone=obs: " "$work/w.txt"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP the browser check: no chromium (apt-get install chromium)"
  exit 0
fi
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --window-size=1400,1000 --screenshot="$work/shot.png" "file://$work/a.html" \
  > "$work/browser.log" 2>&1
# The browser's own parse keeps the charts' SVG elements.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --dump-dom "file://$work/a.html" > "$work/dom.html" 2> "$work/browser.log"
grep -q '<svg xmlns="http://www.w3.org/2000/svg" class="chart"' "$work/dom.html"
grep -q '<polyline points=' "$work/dom.html"
grep -q '<title>call 4 (action 12): re-recorded</title>' "$work/dom.html"
python3 - "$work/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (1400, 1000), (width, height)
print(f"screenshot: {width}x{height}, {len(data)} bytes")
PY
