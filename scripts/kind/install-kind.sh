#!/usr/bin/env bash
# Installs kind (sigs.k8s.io/kind at KIND_VERSION, scripts/kind/versions.env) from the Go module proxy into
# ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/kind/<KIND_VERSION>/kind. Prints the path of the kind
# binary on stdout; progress goes to stderr. Exits at once when it is cached.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
source "${here}/lib/go-install.sh"
dir="$(go_install_cached kind "${KIND_VERSION}" kind sigs.k8s.io/kind)"
printf '%s/kind\n' "${dir}"
