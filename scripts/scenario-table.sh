#!/usr/bin/env bash
# scenario-table.sh CAPSIM: prints the Markdown table of built-in scenarios
# (name, the PyTorch test it mirrors, its description and asserted numbers,
# and, per torch profile, whether those numbers hold under it, differ, or
# are refused as not modelled for that release) that
# docs/cudagraph-trees.md carries. Exits 1 if any scenario's expectation fails
# under the profile it was written for.
set -euo pipefail
capsim=$1
status=0
profiles=$("$capsim" version --profiles | awk '/^[^ ]/ && $1 != "not" {print $1}')
header="| scenario | mirrors | asserts (expected values, under the scenario's own profile) |"
rule="|---|---|---|"
for p in $profiles; do header+=" $p |"; rule+="---|"; done
echo "$header"
echo "$rule"
for name in $("$capsim" scenario --list | awk '{print $1}'); do
  out=$("$capsim" scenario "$name") || status=1
  mirrors=$(sed -n 's/^mirrors //p' <<<"$out")
  about=$(sed -n 's/^about //p' <<<"$out")
  asserts=$(sed -n 's/^expect \(.*\): \(-\{0,1\}[0-9]*\) (got .*$/\1 = \2/p' <<<"$out" | paste -sd';' | sed 's/;/; /g')
  own=$(sed -n 's/^config .*torch_profile=\([^ ]*\)$/\1/p' <<<"$out")
  row="| \`$name\` | ${mirrors//|/\\|} | $about: $asserts. |"
  for p in $profiles; do
    # Exit 2: the profile's releases lack what the scenario declares and
    # capsim refuses it (a set_ on an input before 2.13).
    rc=0
    under=$("$capsim" scenario "$name" --torch "$p" 2>/dev/null) || rc=$?
    if [ "$rc" = 2 ]; then
      mark="refused"
    elif grep -q ' FAIL$' <<<"$under"; then
      mark="differs"
    else
      mark="holds"
    fi
    [ "$p" = "$own" ] && mark="**$mark**"
    row+=" $mark |"
  done
  echo "$row"
done
exit $status
