#!/usr/bin/env bash
# scenario-table.sh CAPSIM: prints the Markdown table of built-in scenarios
# (name, the PyTorch test it mirrors, its description and asserted numbers) that
# docs/cudagraph-trees.md carries. Exits 1 if any scenario's expectation fails.
set -euo pipefail
capsim=$1
status=0
echo "| scenario | mirrors | asserts (expected values; all hold) |"
echo "|---|---|---|"
for name in $("$capsim" scenario --list | awk '{print $1}'); do
  out=$("$capsim" scenario "$name") || status=1
  mirrors=$(sed -n 's/^mirrors //p' <<<"$out")
  about=$(sed -n 's/^about //p' <<<"$out")
  asserts=$(sed -n 's/^expect \(.*\): \(-\{0,1\}[0-9]*\) (got .*$/\1 = \2/p' <<<"$out" | paste -sd';' | sed 's/;/; /g')
  echo "| \`$name\` | ${mirrors//|/\\|} | $about: $asserts. |"
done
exit $status
