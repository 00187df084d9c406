#!/usr/bin/env bash
# gallery.sh CAPSIM SOURCE_DIR: docs/gallery is what capsim draws today. The
# gallery's DOT files must equal a fresh `scripts/docs-images.sh` run byte for
# byte (the PNGs depend on the installed Graphviz and fonts, so only their
# existence is checked); when a drawing changes, `make docs-images` updates
# the gallery.
set -u
capsim=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bash "$src/scripts/docs-images.sh" "$capsim" "$dir" >/dev/null || { echo "docs-images.sh failed"; exit 1; }
status=0
for dot in "$dir"/*.dot; do
  name=$(basename "$dot")
  if ! cmp -s "$dot" "$src/docs/gallery/$name"; then
    echo "docs/gallery/$name is stale: run make docs-images"
    status=1
  fi
  [ -s "$src/docs/gallery/${name%.dot}.png" ] || { echo "docs/gallery/${name%.dot}.png is missing"; status=1; }
  grep -q "gallery/${name%.dot}.png" "$src/docs/gallery.md" || { echo "docs/gallery.md does not show ${name%.dot}.png"; status=1; }
done
[ $status -eq 0 ] && echo ok
exit $status
