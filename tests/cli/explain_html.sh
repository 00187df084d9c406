#!/usr/bin/env bash
# capsim explain --html: the page is self-contained (no script, no link out),
# parses as HTML, holds the drawing as inline SVG, the timeline and the
# explanations (and, with --what-if, the what-if table), and is the same
# bytes twice. Then, when a headless Chromium is
# installed, the page is opened in it and a screenshot taken (the page must
# load and draw); without Chromium that part is skipped with a message.
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
# With --what-if, the page gets the what-if table (#138949: clone ends W1).
"$capsim" explain "$root/data/casebook/issue_138949.jsonl" --what-if auto --html "$work/w.html" \
  > "$work/w.txt"
grep -q "<h2>what if</h2>" "$work/w.html"
grep -q "<code>clone=obs</code></td><td>0 &rarr; 1</td>" "$work/w.html"
grep -q "what-if clone=obs: " "$work/w.txt"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP the browser check: no chromium (apt-get install chromium)"
  exit 0
fi
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --window-size=1400,1000 \
  --screenshot="$work/shot.png" "file://$work/a.html" > "$work/browser.log" 2>&1
python3 - "$work/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (1400, 1000), (width, height)
print(f"screenshot: {width}x{height}, {len(data)} bytes")
PY
