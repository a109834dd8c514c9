#!/usr/bin/env bash
# npm run demo — brings up the local stack (building what is missing), applies examples/, and shows
# the API at work. Safe to run again: the stack is reused when it is already up.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
npm run build --silent
bash test/controlplane/build.sh
node dist/scripts/dev-up.js
export KUBECONFIG="$PWD/.worldline/dev/kubeconfig"
kubectl="$PWD/.worldline/dev/bin/kubectl"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "apply examples/"
"$kubectl" apply -f examples/
step "kubectl get worldline (every kind, with its columns)"
sleep 2
"$kubectl" get worldline -A
step "the World's conditions, written by the controller"
"$kubectl" get world hello -n default -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'
step "kubectl explain world.spec.agent"
"$kubectl" explain world.spec.agent | head -n 30
cat <<'TXT'

The Root stays unadopted and the World Pending until a node-agent serves the node: running worlds,
checks and collapse arrive with the node-agent. Stop the stack with: npm run dev:down
TXT
