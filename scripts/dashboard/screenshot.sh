#!/usr/bin/env bash
# Takes a PNG screenshot of a local HTML page (the dashboard page render.ts writes) with Debian's chromium,
# headless, in a fresh profile that is removed afterwards, with no network service of the browser on.
#   bash scripts/dashboard/screenshot.sh PAGE.html OUT.png [WIDTH,HEIGHT]
set -euo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 PAGE.html OUT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
page=$1
out=$2
size=${3:-1600,2000}
if [[ ! -f $page ]]; then
  echo "$0: $page is not a file" >&2
  exit 2
fi
if [[ ! $size =~ ^[0-9]+,[0-9]+$ ]]; then
  echo "$0: size must be WIDTH,HEIGHT, got '$size'" >&2
  exit 2
fi
if ! command -v chromium >/dev/null; then
  echo "$0: chromium is not installed (apt-get install -y chromium)" >&2
  exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
args=(
  --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
  --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$profile"
  --screenshot="$(realpath -m "$out")" --window-size="$size" "file://$(realpath "$page")"
)
echo "screenshot: chromium ${size} -> $out" >&2
chromium "${args[@]}" 2>"$profile/chromium.log" || {
  cat "$profile/chromium.log" >&2
  exit 1
}
[[ -s $out ]] || {
  echo "$0: chromium wrote no $out" >&2
  cat "$profile/chromium.log" >&2
  exit 1
}
