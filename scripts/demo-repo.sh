#!/usr/bin/env bash
# Creates the demo Root's directory (examples/root.yaml): a tiny shell project, "greeter", owned by
# uid 1000, with a test suite (checks/test.sh) that the demo Policy's check runs on every candidate.
# The suite already tests a feature the source lacks (greet.sh --shout): implementing it is the demo
# agent's task.
#
# Idempotent. After a first demo the directory is a link into the dev node-agent's store (adopted),
# and its content is whatever the Collapses made of it: left alone. A directory or adopted Root from
# an older version of this demo (no checks/test.sh) is replaced; for an adopted one that means
# stopping the dev stack and removing the dev store, which is done only when the store holds nothing
# but this demo's Root.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=/srv/worldline-demo/repo
store="$PWD/.worldline/dev/store"

if [[ -L $dir ]]; then
  target=$(readlink "$dir")
  if [[ -f $dir/checks/test.sh ]]; then
    echo "$dir is adopted already (-> $target): left as it is"
    exit 0
  fi
  if [[ $target != "$store/live/demo-repo" ]]; then
    echo "$dir links to $target, not into this work tree's dev store ($store): remove it yourself" >&2
    exit 1
  fi
  others=$(find "$store/live" -mindepth 1 -maxdepth 1 ! -name demo-repo -printf '%f ')
  if [[ -n $others ]]; then
    echo "$dir was adopted by an older demo, but the dev store also holds other Roots ($others): not removing it" >&2
    echo "move those Roots' content out, then: npm run dev:down && rm -rf '$store' '$dir'" >&2
    exit 1
  fi
  echo "$dir was adopted by an older version of the demo: stopping the dev stack and removing the dev store"
  node dist/scripts/dev-down.js
  rm -f "$dir"
  rm -rf "$store"
elif [[ -e $dir ]]; then
  if [[ -f $dir/checks/test.sh ]]; then
    echo "$dir exists (not adopted yet): left as it is"
    exit 0
  fi
  echo "$dir is from an older version of the demo: replacing it"
  rm -rf "$dir"
fi

cp -R examples/greeter/. "$dir/"
chmod 0755 "$dir/checks/test.sh" "$dir/src/greet.sh"
chown -R 1000:1000 "$dir"
echo "created $dir (owned by uid 1000)"
