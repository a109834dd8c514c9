#!/usr/bin/env bash
# Builds crictl (sigs.k8s.io/cri-tools at CRICTL_VERSION, scripts/kind/versions.env) for the kind node,
# cached in ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/crictl/<CRICTL_VERSION>/crictl. Prints the
# cache directory on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
source "${here}/lib/go-install.sh"
go_install_cached crictl "${CRICTL_VERSION}" crictl sigs.k8s.io/cri-tools/cmd/crictl \
  "-X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION}"
