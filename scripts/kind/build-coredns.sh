#!/usr/bin/env bash
# Builds CoreDNS (github.com/coredns/coredns at COREDNS_VERSION, the version kubeadm deploys; see
# scripts/kind/versions.env), cached in ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/coredns/<version>/.
# Prints the cache directory on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
source "${here}/lib/go-install.sh"
go_install_cached coredns "${COREDNS_VERSION}" coredns github.com/coredns/coredns \
  "-X github.com/coredns/coredns/coremain.GitCommit=go-module-proxy"
