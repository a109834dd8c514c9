#!/usr/bin/env bash
# Creates the demo Root's directory (examples/root.yaml) with a few files owned by uid 1000, unless
# it exists already (after a first demo it is a link into the node-agent's store: left alone).
set -euo pipefail
dir=/srv/worldline-demo/repo
if [[ -e $dir || -L $dir ]]; then
  exit 0
fi
mkdir -p "$dir/checks" "$dir/src"
printf '# demo repository\n\nManaged by worldline.\n' >"$dir/README.md"
printf 'def greet():\n    return "hello"\n' >"$dir/src/app.py"
printf '#!/bin/sh\n# Verifier: the README must still be there and mention worldline.\ngrep -q worldline README.md\n' >"$dir/checks/verify.sh"
chmod 0755 "$dir/checks/verify.sh"
chown -R 1000:1000 "$dir"
echo "created $dir (owned by uid 1000)"
