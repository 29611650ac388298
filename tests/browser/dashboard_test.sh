#!/usr/bin/env bash
# The dashboard and the report in a real browser: a small experiment on the bundled model, its
# report, `joule serve` on a free port, then tests/browser/check_pages.js in headless Chromium.
# Usage: dashboard_test.sh BUILD_DIR SOURCE_DIR [OUT_DIR]
set -euo pipefail
build="$1"; src="$2"; out="${3:-$build/browser}"
if ! command -v chromium >/dev/null || [ ! -d "$src/tools/peers/node_modules/playwright-core" ]; then
  echo "chromium or playwright-core missing (scripts/setup.sh installs both)" >&2
  exit 1
fi
work="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$out"
cat > "$work/browser.yaml" <<YAML
name: browser
models:
  - {name: fashion_cnn, path: default, calib: $src/models/fashion_cnn_sample.npy, data: $src/models/fashion_cnn_sample.npy}
grid:
  config: {fp32: none, w8a8: $src/examples/quant/w8a8.yaml}
  threads: [1, 2]
steps:
  - quantize: {config: "\${config}", calib_samples: 16}
  - profile: {threads: "\${threads}", runs: 5, warmup: 1}
  - eval: {threads: "\${threads}"}
YAML
"$build/joule" experiment run "$work/browser.yaml" --dir "$work/runs" --quiet >/dev/null
"$build/joule" report --store "$work/runs/results.sqlite" --experiment browser -o "$work/report.html" >/dev/null
"$build/joule" serve --store "$work/runs/results.sqlite" --port 0 > "$work/serve.txt" &
server=$!
for _ in $(seq 100); do grep -q "^serving" "$work/serve.txt" 2>/dev/null && break; sleep 0.1; done
url="$(grep -o 'http://[^ ]*' "$work/serve.txt")"
node "$src/tests/browser/check_pages.js" "$url" "$work/report.html" "$out" browser
