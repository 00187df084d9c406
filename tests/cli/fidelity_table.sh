#!/usr/bin/env bash
# docs/fidelity.md's release table is what scripts/fidelity-table.sh prints
# now: a trace that starts or stops matching fails here until the document
# says so.
#   fidelity_table.sh CAPSIM
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || exit 77
want=$("$root/scripts/fidelity-table.sh" "$1")
have=$(sed -n '/^<!-- fidelity-table/,/^<!-- \/fidelity-table -->/p' "$root/docs/fidelity.md" | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "docs/fidelity.md's release table is stale; scripts/fidelity-table.sh prints:"
  echo "$want"
  diff <(echo "$have") <(echo "$want") || true
  exit 1
fi
echo "fidelity table: $(echo "$want" | tail -n +3 | wc -l) programs, as documented"
