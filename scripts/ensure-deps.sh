#!/usr/bin/env bash
# Installs npm dependencies (with better-sqlite3's native build) when node_modules is missing or stale.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.worldline-installed
if [[ ! -f $stamp || package-lock.json -nt $stamp || ! -f node_modules/better-sqlite3/build/Release/better_sqlite3.node ]]; then
  npm ci --no-audit --no-fund
  if [[ ! -f node_modules/better-sqlite3/build/Release/better_sqlite3.node ]]; then
    (cd node_modules/better-sqlite3 && npx --no-install node-gyp rebuild --release --nodedir=/usr)
  fi
  touch "$stamp"
fi
