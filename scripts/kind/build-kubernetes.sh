#!/usr/bin/env bash
# Builds the Kubernetes commands a kind node needs (kubelet, kubeadm, kubectl, kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy) from k8s.io/kubernetes at the version pinned in
# scripts/controlplane/versions.env, the way the test control plane is built (lib/kubernetes-module.sh).
# Cached in ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/kubernetes/<KUBERNETES_VERSION>/; exits at once
# when that is complete. Prints the cache directory on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
source "${here}/lib/kubernetes-module.sh"

readonly RECIPE=1
cmds=(kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
dest="${kind_cache}/kubernetes/${KUBERNETES_VERSION}"
want="kubernetes=${KUBERNETES_VERSION} recipe=${RECIPE}"

stamp_ok "${dest}" "${want}" "${cmds[@]}" && { printf '%s\n' "${dest}"; exit 0; }
take_lock kubernetes
stamp_ok "${dest}" "${want}" "${cmds[@]}" && { printf '%s\n' "${dest}"; exit 0; }

use_go
k8s_build_env
started=${SECONDS}
work="$(mktemp -d "${TMPDIR:-/tmp}/worldline-kind-k8s.XXXXXX")"
mkdir -p "$(dirname "${dest}")"
stage="$(mktemp -d "$(dirname "${dest}")/.stage.XXXXXX")"
trap 'rm -rf -- "${work}" "${stage}"' EXIT

k8s_write_wrapper_module "${work}"
pkgs=()
for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${c}"); done
log "building ${cmds[*]} at ${KUBERNETES_VERSION} (long on a cold Go cache)"
(cd "${work}" && nice -n 10 go build -trimpath -ldflags "${k8s_ldflags}" -o "${stage}/" "${pkgs[@]}")
for c in "${cmds[@]}"; do
  case "${c}" in
    kubeadm) version_args=(version -o short) ;;
    kubectl) version_args=(version --client) ;;
    *) version_args=(--version) ;;
  esac
  got="$("${stage}/${c}" "${version_args[@]}" 2>&1 || true)"
  [[ "${got}" == *"${KUBERNETES_VERSION}"* ]] || die "${c} ${version_args[*]} says '${got}', want ${KUBERNETES_VERSION}"
done
printf '%s\n' "${want}" >"${stage}/stamp"
install_dir "${stage}" "${dest}"
log "installed ${dest} in $((SECONDS - started))s"
printf '%s\n' "${dest}"
