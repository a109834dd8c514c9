#!/usr/bin/env bash
# Builds etcd for the kind control plane the way the test control plane does: go.etcd.io/etcd/server/v3 at
# ETCD_VERSION (scripts/controlplane/versions.env) in a wrapper module of its own (lib/kubernetes-module.sh).
# Cached in ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/etcd/<ETCD_VERSION>/etcd.
# Prints the cache directory on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
source "${here}/lib/kubernetes-module.sh"

readonly RECIPE=1
dest="${kind_cache}/etcd/${ETCD_VERSION}"
want="etcd=${ETCD_VERSION} recipe=${RECIPE}"
stamp_ok "${dest}" "${want}" etcd && { printf '%s\n' "${dest}"; exit 0; }
take_lock etcd
stamp_ok "${dest}" "${want}" etcd && { printf '%s\n' "${dest}"; exit 0; }

use_go
k8s_build_env
work="$(mktemp -d "${TMPDIR:-/tmp}/worldline-kind-etcd.XXXXXX")"
mkdir -p "$(dirname "${dest}")"
stage="$(mktemp -d "$(dirname "${dest}")/.stage.XXXXXX")"
trap 'rm -rf -- "${work}" "${stage}"' EXIT
etcd_write_wrapper_module "${work}"
log "building etcd ${ETCD_VERSION}"
(cd "${work}" && nice -n 10 go build -trimpath -ldflags "${etcd_ldflags}" -o "${stage}/etcd" go.etcd.io/etcd/server/v3)
got="$("${stage}/etcd" --version | sed -n 's/^etcd Version: //p')"
[[ "v${got}" == "${ETCD_VERSION}" ]] || die "etcd --version says '${got}', want '${ETCD_VERSION#v}'"
printf '%s\n' "${want}" >"${stage}/stamp"
install_dir "${stage}" "${dest}"
printf '%s\n' "${dest}"
