#!/usr/bin/env bash
# Exits 0 when the slow pieces of the kind cluster are already built and cached on this machine (the
# Kubernetes binaries and images, CoreDNS, crictl, etcd, pause, kind, the Debian base, helm), so that
# `npm run test:e2e` costs minutes, not the hour a cold build takes; otherwise names what is missing on
# stderr and exits 1. Builds nothing. .ci/run uses it to decide whether the e2e tier fits CI's time limit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../controlplane/versions.env"
source "${here}/versions.env"
source "${here}/../helm/versions.env"
cache="${WORLDLINE_CACHE:-${HOME}/.cache/worldline}"
# The recipe numbers of the two pieces whose cache folder names carry one, read from their scripts.
recipe_of() { sed -n 's/^readonly RECIPE=\([0-9]*\)$/\1/p' "${here}/$1"; }
images_recipe="$(recipe_of build-component-images.sh)" debian_recipe="$(recipe_of build-debian-base.sh)"
missing=()
for piece in "kind/kubernetes/${KUBERNETES_VERSION}" "kind/images/${KUBERNETES_VERSION}-r${images_recipe}" "kind/coredns/${COREDNS_VERSION}" \
  "kind/crictl/${CRICTL_VERSION}" "kind/etcd/${ETCD_VERSION}" "kind/pause/${PAUSE_VERSION}" "kind/kind/${KIND_VERSION}" \
  "kind/debian/${DEBIAN_SUITE}-r${debian_recipe}" "helm/${HELM_VERSION}"; do
  [[ -f "${cache}/${piece}/stamp" ]] || missing+=("${piece}")
done
if ((${#missing[@]})); then
  printf 'not cached under %s: %s\n' "${cache}" "${missing[*]}" >&2
  exit 1
fi
