#!/usr/bin/env bash
# npm run demo — brings up the local stack (building what is missing), adopts the sample Root, runs a
# sample World that edits files in a sandbox, and prints its candidate. Safe to run again: the stack
# is reused when it is already up. Needs root (the node-agent mounts and creates namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
npm run build --silent
bash test/controlplane/build.sh >/dev/null
bash scripts/demo-repo.sh
node dist/scripts/dev-up.js
export KUBECONFIG="$PWD/.worldline/dev/kubeconfig"
kubectl="$PWD/.worldline/dev/bin/kubectl"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
wait_for() { # wait_for KIND NAME JSONPATH VALUE...
  local kind=$1 name=$2 path=$3; shift 3
  for _ in $(seq 1 120); do
    local v
    v=$("$kubectl" get "$kind" "$name" -n default -o "jsonpath=$path" 2>/dev/null || true)
    for want in "$@"; do [[ $v == "$want" ]] && return 0; done
    sleep 0.5
  done
  echo "timed out waiting for $kind/$name $path in {$*}" >&2
  return 1
}

step "adopt the Root: /srv/worldline-demo/repo moves into the node store and becomes a link through live/"
"$kubectl" apply -f examples/root.yaml
wait_for root demo-repo '{.status.phase}' Ready Broken
"$kubectl" get wlroot demo-repo
ls -l /srv/worldline-demo/repo

step "run a World: the agent edits README.md in its own copy-on-write view, in a sandbox"
"$kubectl" apply -f examples/world.yaml
wait_for world hello '{.status.phase}' Captured Failed Refused
"$kubectl" get wl hello
step "what the sandbox reported before the agent ran (status.isolation.observation)"
"$kubectl" get world hello -n default -o jsonpath='{.status.isolation.observation}' | head -c 600; echo
step "the candidate: a content-addressed identity over the base generation and the change"
"$kubectl" get world hello -n default -o jsonpath='{.status.candidate}'; echo
step "the host directory is unchanged until a Collapse promotes the candidate"
cat /srv/worldline-demo/repo/README.md

step "kubectl get worldline"
"$kubectl" get worldline -A
cat <<'TXT'

Checks and Collapse are being wired (see README, Status). Stop the stack with:
npm run dev:down   (the store under .worldline/dev/store stays: the Root's host path links into it)
TXT
