#!/usr/bin/env bash
# npm run demo — the whole loop, as a user sees it: bring up the local stack (building what is
# missing), adopt the sample Root, apply the Policy that governs it, run a World whose agent edits the
# project in a sandbox, capture its candidate, run the Policy's check on it, collapse it into the host
# directory with a signed receipt and verify the receipt ledger; then a second World whose check
# fails, and whose Collapse is denied by name. Safe to run again: the stack is reused when it is up,
# the demo's Worlds, Checks and Collapses from an earlier run are deleted first, and the adopted Root
# keeps what earlier runs collapsed into it. Needs root (the node-agent mounts and creates namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
npm run build --silent
bash scripts/controlplane/build.sh >/dev/null
bash scripts/demo-repo.sh
node dist/scripts/dev-up.js
export KUBECONFIG="$PWD/.worldline/dev/kubeconfig"
kubectl="$PWD/.worldline/dev/bin/kubectl"
store="$PWD/.worldline/dev/store"
repo=/srv/worldline-demo/repo
node=dev-node
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
k() { "$kubectl" -n default "$@"; }
get() { k get "$1" "$2" -o "jsonpath=$3" 2>/dev/null || true; }
die() { # die MESSAGE [KIND NAME]: prints the object's status, then fails the demo
  echo "demo failed: $1" >&2
  if [[ $# -ge 3 ]]; then k get "$2" "$3" -o jsonpath='{.status}' >&2 || true; echo >&2; fi
  exit 1
}
wait_for() { # wait_for KIND NAME JSONPATH VALUE...: until the field has one of the values (3 min)
  local kind=$1 name=$2 path=$3 v=''
  shift 3
  for _ in $(seq 1 360); do
    v=$(get "$kind" "$name" "$path")
    for want in "$@"; do [[ $v == "$want" ]] && return 0; done
    sleep 0.5
  done
  die "timed out waiting for $kind/$name $path in {$*} (last: '$v')" "$kind" "$name"
}
show_log() { # show_log FILE: what a sandboxed program printed, indented
  if [[ -s $1 ]]; then sed 's/^/  | /' "$1"; else echo "  (no output recorded at $1)"; fi
}

step "clean up an earlier run: the demo's Collapses, Worlds and their Checks"
k delete collapse hello-collapse hello-broken-collapse --ignore-not-found --wait --timeout=120s
k delete world hello hello-broken --ignore-not-found --wait --timeout=120s
k delete check hello-verify hello-examine hello-broken-verify hello-broken-examine hello-verify-revalidate --ignore-not-found --wait --timeout=120s

step "adopt the Root: $repo moves into the node store and becomes a link through live/"
k apply -f examples/root.yaml
wait_for root demo-repo '{.status.phase}' Ready Broken
[[ $(get root demo-repo '{.status.phase}') == Ready ]] || die "the Root is not Ready" root demo-repo
k get wlroot demo-repo
ls -l "$repo"
ls -lR "$repo/"
echo "-- src/greet.sh in PRIME:"
cat "$repo/src/greet.sh"

step "the Policy: every candidate of demo-repo must pass the project's tests (checks/test.sh, taken from PRIME)"
k apply -f examples/policy.yaml
k wait --for=condition=Accepted --timeout=60s policy/demo-policy >/dev/null || die "the Policy was not accepted" policy demo-policy
k get wlpol demo-policy

step "run World hello: the agent implements greet.sh --shout in its own copy-on-write view, in a sandbox"
k apply -f examples/world.yaml
wait_for world hello '{.status.phase}' Captured Failed Refused
k get wl hello
[[ $(get world hello '{.status.phase}') == Captured ]] || die "World hello was not captured" world hello
echo "-- what the agent printed:"
show_log "$store/worlds/$(get world hello '{.metadata.uid}').output.log"
echo "-- what the sandbox reported before the agent ran (status.isolation.observation, abridged):"
get world hello '{.status.isolation.observation}' | head -c 400
echo

step "the candidate: a content-addressed identity over the base generation and the change"
get world hello '{.status.candidate}'
echo
echo "-- the host directory is unchanged until a Collapse promotes the candidate:"
cat "$repo/src/greet.sh"
echo "VERSION $(cat "$repo/VERSION")"

step "the Policy's check runs on exactly the candidate's bytes (Check hello-verify, created by the controller)"
wait_for check hello-verify '{.status.phase}' Passed Failed Refused
k get wlcheck hello-verify
[[ $(get check hello-verify '{.status.phase}') == Passed ]] || die "the check of World hello did not pass" check hello-verify
echo "-- what checks/test.sh printed in the check sandbox:"
show_log "$store/checks/$(get check hello-verify '{.metadata.uid}').output.log"

step "the private-evaluator check (Check hello-examine): checks/examine.py, staged from PRIME, runs greet.sh as the candidate principal; the verdict is the examiner's JUnit report"
wait_for check hello-examine '{.status.phase}' Passed Failed Refused
k get wlcheck hello-examine
[[ $(get check hello-examine '{.status.phase}') == Passed ]] || die "the private check of World hello did not pass" check hello-examine
echo "-- the report it admitted: $(get check hello-examine '{.status.verdict}'), $(get check hello-examine '{.status.message}')"
k get wl hello

step "collapse: promote the checked candidate into the live Root, atomically"
cp -a "$repo/." "$tmp/before"
k apply -f examples/collapse.yaml
k wait --for=condition=Collapsed --timeout=120s collapse/hello-collapse || die "Collapse hello-collapse did not commit" collapse hello-collapse
k get wlcol hello-collapse
k get wlroot demo-repo

step "the host directory now has the change (diff of $repo before and after the collapse)"
diff -u --label before/src/greet.sh --label after/src/greet.sh "$tmp/before/src/greet.sh" "$repo/src/greet.sh" || true
diff -u --label before/VERSION --label after/VERSION "$tmp/before/VERSION" "$repo/VERSION" || true

step "World hello is Collapsed"
k get wl hello
[[ $(get world hello '{.status.phase}') == Collapsed ]] || die "World hello is not Collapsed" world hello

step "the signed receipt of the transaction (Collapse .status.receipt)"
get collapse hello-collapse '{.status.receipt}'
echo

step "verify the node's receipt ledger against the public key published in ConfigMap worldline-receipts-$node"
"$kubectl" -n worldline-system get configmap "worldline-receipts-$node" -o jsonpath='{.data.public-key\.pem}' >"$tmp/receipts.pub.pem"
echo "key id: $("$kubectl" -n worldline-system get configmap "worldline-receipts-$node" -o jsonpath='{.data.key-id}')"
node dist/cli/worldline.js receipts verify --ledger "$store/receipts/ledger.jsonl" --public-key "$tmp/receipts.pub.pem"

step "verify the receipt Collapse hello-collapse shows in its status: the published key signed it, and the ledger's receipt says what the status says"
k get collapse hello-collapse -o json >"$tmp/hello-collapse.json"
node dist/cli/worldline.js receipts verify-status --collapse "$tmp/hello-collapse.json" --public-key "$tmp/receipts.pub.pem" --ledger "$store/receipts/ledger.jsonl"

step "run World hello-broken: this agent implements --shout wrongly"
cp -a "$repo/." "$tmp/after"
k apply -f examples/world-failing.yaml
wait_for world hello-broken '{.status.phase}' Captured Failed Refused
[[ $(get world hello-broken '{.status.phase}') == Captured ]] || die "World hello-broken was not captured" world hello-broken
k get wl hello-broken

step "its check fails (Check hello-broken-verify)"
wait_for check hello-broken-verify '{.status.phase}' Passed Failed Refused
k get wlcheck
[[ $(get check hello-broken-verify '{.status.phase}') == Failed ]] || die "the check of World hello-broken did not fail" check hello-broken-verify
echo "-- what checks/test.sh printed in the check sandbox:"
show_log "$store/checks/$(get check hello-broken-verify '{.metadata.uid}').output.log"

step "its Collapse is Denied, by name"
k apply -f examples/collapse-failing.yaml
wait_for collapse hello-broken-collapse '{.status.phase}' Committed Denied
k get wlcol
reasons=$(get collapse hello-broken-collapse '{.status.decision.reasons}')
echo "phase:   $(get collapse hello-broken-collapse '{.status.phase}')"
echo "reasons: $reasons"
echo "receipt: $(get collapse hello-broken-collapse '{.status.receipt.id}') (a denied transaction is receipted too)"
[[ $(get collapse hello-broken-collapse '{.status.phase}') == Denied && $reasons == *CHECK_NOT_PASSED* ]] ||
  die "Collapse hello-broken-collapse was not denied with CHECK_NOT_PASSED" collapse hello-broken-collapse

step "the host directory is unchanged by it"
if diff -r "$tmp/after" "$repo/"; then
  echo "no difference: $repo is as Collapse hello-collapse left it"
else
  die "the host directory changed after a denied collapse"
fi
k get wlroot demo-repo

step "the ledger again: every transaction so far, the denied one included, chained and signed"
node dist/cli/worldline.js receipts verify --ledger "$store/receipts/ledger.jsonl" --public-key "$tmp/receipts.pub.pem"

step "kubectl get worldline"
"$kubectl" get worldline -A
cat <<'TXT'

Run it again: the Root keeps what was collapsed (--shout stays, VERSION keeps counting). Stop the
stack with: npm run dev:down   (the store under .worldline/dev/store stays: the Root's host path links
into it)
TXT
