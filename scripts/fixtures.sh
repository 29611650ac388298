#!/usr/bin/env bash
# Exports the torchvision / transformer test models into a cache directory, unless the cache
# was made by the current tools/export_models.py.
set -euo pipefail
out=${1:?usage: fixtures.sh DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
want=$(sha256sum "$here/tools/export_models.py" | cut -d' ' -f1)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ]; then exit 0; fi
echo "fixtures: exporting models to $out (one time, about a minute)" >&2
mkdir -p "$out"
/usr/bin/python3 "$here/tools/export_models.py" --out "$out"
