#!/usr/bin/env bash
# Builds the worldline N-API addon (native/build/Release/worldline_native.node) with node-gyp against the
# installed Node headers (/usr/include/node; node-gyp must never try to download headers). Rebuilds only
# when binding.gyp or a source under native/src is newer than the built addon; FORCE=1 always rebuilds.
# The same run builds native/build/Release/worldline_shim, the per-world supervisor (native/src/shim/).
set -euo pipefail
cd "$(dirname "$0")"

out=build/Release/worldline_native.node
shim=build/Release/worldline_shim
if [[ "${FORCE:-0}" != 1 && -f "$out" && -f "$shim" ]]; then
  if [[ -z "$(find binding.gyp src -newer "$out" -print -quit)" ]]; then
    exit 0
  fi
fi

nodedir="${WORLDLINE_NODEDIR:-/usr}"
if npx --no-install node-gyp --version >/dev/null 2>&1; then
  gyp=(npx --no-install node-gyp)
else
  gyp_js="$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js"
  if [[ ! -f "$gyp_js" ]]; then
    echo "native/build.sh: node-gyp not found (neither via npx nor at $gyp_js)" >&2
    exit 1
  fi
  gyp=(node "$gyp_js")
fi

"${gyp[@]}" rebuild --nodedir="$nodedir" --loglevel=warn
test -f "$out"
test -x "$shim"
