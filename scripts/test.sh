#!/usr/bin/env bash
# The project's test command (`npm test`): installs what is missing, builds, checks generated files
# and lint, then runs every test file with node's test runner. Control-plane binaries are built on
# first use and cached by version outside the work tree (see scripts/controlplane/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
npm run build --silent
npm run lint --silent
bash scripts/controlplane/build.sh
mapfile -t files < <(find dist/test -name '*.test.js' | sort)
exec node --test --test-concurrency=1 --test-timeout=600000 "${files[@]}"
