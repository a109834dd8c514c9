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

mkdir -p "$dir/checks" "$dir/src"
cat >"$dir/README.md" <<'EOF'
# greeter

A tiny project managed by worldline. `sh src/greet.sh [--shout] [NAME]` prints a greeting.
Tests: `sh checks/test.sh` (the demo Policy runs it on every candidate).
EOF
cat >"$dir/src/greet.sh" <<'EOF'
#!/bin/sh
# greet.sh [NAME] — prints a greeting (default NAME: world).
printf 'Hello, %s!\n' "${1:-world}"
EOF
printf '1\n' >"$dir/VERSION"
cat >"$dir/checks/test.sh" <<'EOF'
#!/bin/sh
# The project's tests. The demo Policy's check "verify" runs them in each candidate's tree. This file
# is a verifier: the check runs PRIME's copy of it, never the candidate's. Exit 0 = PASS.
failed=0
expect() { # expect DESCRIPTION WANT [ARG...]: `sh src/greet.sh ARG...` must print WANT
  desc=$1 want=$2
  shift 2
  got=$(sh src/greet.sh "$@" 2>&1) || got="$got (exit $?)"
  if [ "$got" = "$want" ]; then
    echo "ok   $desc"
  else
    echo "FAIL $desc: want '$want', got '$got'"
    failed=1
  fi
}
expect 'greets the world by default' 'Hello, world!'
expect 'greets by name' 'Hello, Ada!' Ada
expect '--shout greets in capitals' 'HELLO, ADA!' --shout Ada
case $(cat VERSION) in
  '' | *[!0-9]*) echo "FAIL VERSION is a number: got '$(cat VERSION)'"; failed=1 ;;
  *) echo "ok   VERSION is a number" ;;
esac
exit "$failed"
EOF
chmod 0755 "$dir/checks/test.sh" "$dir/src/greet.sh"
chown -R 1000:1000 "$dir"
echo "created $dir (owned by uid 1000)"
