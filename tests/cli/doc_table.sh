#!/usr/bin/env bash
# A table of docs/fidelity.md is what its script prints now: a trace that
# starts or stops matching (or whose graphs or explanations change) fails
# here until the document says so.
#   doc_table.sh SCRIPT MARKER CAPSIM
# SCRIPT (under scripts/) prints the table; the document holds it between
# "<!-- MARKER -->" and "<!-- /MARKER -->".
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$1 marker=$2
command -v python3 >/dev/null || exit 77
want=$("$root/scripts/$script" "$3")
have=$(sed -n "/^<!-- $marker/,/^<!-- \/$marker -->/p" "$root/docs/fidelity.md" | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "docs/fidelity.md's $marker is stale; scripts/$script prints:"
  echo "$want"
  diff <(echo "$have") <(echo "$want") || true
  exit 1
fi
echo "$marker: $(echo "$want" | tail -n +3 | wc -l) rows, as documented"
