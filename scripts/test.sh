#!/usr/bin/env bash
# The project's test command. `npm test` runs every tier; `npm run test:unit|test:kernel|test:integration`
# (this script with the tier as its argument) runs one. Each installs what is missing, builds, checks
# generated files and lint, then runs the tier's test files with node's test runner. The kernel and
# integration tiers run as root on the real kernel; the integration tier also needs the control-plane
# binaries, built on first use and cached by version outside the work tree (scripts/controlplane/build.sh).
#   unit         pure logic, no root, no kernel features (test/unit)
#   kernel       the Linux kernel as root: namespaces, overlayfs, cgroups, the native addon (test/kernel)
#   integration  a real kube-apiserver + etcd, the controller and node-agent as processes (test/integration)
#   images       not part of `npm test`: the worldline image built locally and run in real containers
#                (test/images; `npm run test:images`; about 10 minutes the first time, then cached)
#   e2e          not part of `npm test`: a two-node kind cluster on a locally built node image, worldline
#                installed with helm, and docs/quickstart-kind.md run as written (test/e2e;
#                `npm run test:e2e`; about 60 minutes the first time on 2 cores, then about 8)
#   faults       not part of `npm test`: the fault campaign, 200 Worlds and 75 Collapses while kill -9 lands
#                on the controller, node-agent, kube-apiserver and etcd (test/faults; `npm run test:faults`;
#                WORLDLINE_FAULTS_SEED=<seed> replays a run; see docs/testing.md)
#   fuzz         not part of `npm test`: 10,000 generated objects per kind, valid and near-valid, created,
#                updated and deleted through the real API server with the controller and node-agent running,
#                some Worlds running generated workloads (test/fuzz; `npm run test:fuzz`; WORLDLINE_FUZZ_SEED
#                replays a run, WORLDLINE_FUZZ_PER_KIND sets the count; see docs/testing.md)
#   soak         not part of `npm test`: 1,000 World lifecycles on one node with the node-agent's memory,
#                descriptors, mounts, cgroups and namespaces sampled and held flat (test/soak; `npm run test:soak`)
set -euo pipefail
cd "$(dirname "$0")/.."
tier="${1:-all}"
case "$tier" in
  all) dirs=(dist/test/unit dist/test/kernel dist/test/integration) ;;
  unit | kernel | integration | images | e2e | faults | fuzz | soak) dirs=("dist/test/$tier") ;;
  *) echo "scripts/test.sh: unknown tier '$tier' (unit, kernel, integration, images, e2e, faults, fuzz, soak, or none for all but images, e2e, faults, fuzz and soak)" >&2; exit 2 ;;
esac
if [[ $tier != unit && $(id -u) != 0 ]]; then
  echo "scripts/test.sh: the $tier tier runs as root (namespaces, mounts, cgroups); run it with sudo" >&2
  exit 1
fi
bash scripts/ensure-deps.sh
npm run build --silent
npm run lint --silent
if [[ $tier == all || $tier == integration || $tier == images || $tier == faults || $tier == fuzz || $tier == soak ]]; then bash scripts/controlplane/build.sh >/dev/null; fi
# A test file gets 10 minutes; the image and cluster tiers build cached pieces first (hours on a cold host).
timeout_ms=600000
if [[ $tier == images || $tier == e2e ]]; then timeout_ms=10800000; fi
if [[ $tier == faults ]]; then timeout_ms=5400000; fi
if [[ $tier == fuzz || $tier == soak ]]; then timeout_ms=21600000; fi
mapfile -t files < <(find "${dirs[@]}" -name '*.test.js' | sort)
exec node --test --test-concurrency=1 --test-timeout="$timeout_ms" "${files[@]}"
