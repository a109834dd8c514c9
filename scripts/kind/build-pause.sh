#!/usr/bin/env bash
# Compiles the pod sandbox ("pause") binary statically from Kubernetes' own C source
# (build/pause/linux/pause.c in the k8s.io/kubernetes module at KUBERNETES_VERSION), stamped with
# PAUSE_VERSION (scripts/kind/versions.env), the tag kubeadm expects for registry.k8s.io/pause.
# Cache: ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/pause/<PAUSE_VERSION>/pause. Prints the cache
# directory on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"

readonly RECIPE=1
dest="${kind_cache}/pause/${PAUSE_VERSION}"
want="pause=${PAUSE_VERSION} source=kubernetes@${KUBERNETES_VERSION} recipe=${RECIPE}"
stamp_ok "${dest}" "${want}" pause && { printf '%s\n' "${dest}"; exit 0; }
take_lock pause
stamp_ok "${dest}" "${want}" pause && { printf '%s\n' "${dest}"; exit 0; }

use_go
command -v gcc >/dev/null || die "gcc missing (apt-get install gcc libc6-dev)"
src="$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | jq -r .Dir)/build/pause/linux/pause.c"
[[ -f "${src}" ]] || die "pause.c not found at ${src}"
mkdir -p "$(dirname "${dest}")"
stage="$(mktemp -d "$(dirname "${dest}")/.stage.XXXXXX")"
trap 'rm -rf -- "${stage}"' EXIT
log "compiling ${src} statically (VERSION=${PAUSE_VERSION})"
gcc -Os -Wall -Werror -static -DVERSION="v${PAUSE_VERSION}" -o "${stage}/pause" "${src}"
strip "${stage}/pause"
"${stage}/pause" -v | grep -q "v${PAUSE_VERSION}" || die "built pause does not report v${PAUSE_VERSION}"
printf '%s\n' "${want}" >"${stage}/stamp"
install_dir "${stage}" "${dest}"
printf '%s\n' "${dest}"
