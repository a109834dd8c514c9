#!/usr/bin/env bash
# Builds the kind node base image: worldline.local/kind-debian (build-debian-base.sh) plus Debian's systemd,
# containerd, runc, CNI plugins, iptables and conntrack, kind's base files taken from the kind Go module
# (sigs.k8s.io/kind@KIND_VERSION, images/base/files: entrypoint, units, hooks) and this project's settings
# in scripts/kind/node/ (containerd config, CNI template, kubelet defaults). The image is tagged
# worldline.local/kind-node-base:<suite>-<hash of its inputs>, so any change of an input rebuilds it and an
# unchanged one is reused. Prints the image name on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
source "${here}/lib/kind-module.sh"

readonly RECIPE=1
base_image="$("${here}/build-debian-base.sh")"
base_id="$(docker image inspect -f '{{.Id}}' "${base_image}")"
files="$(kind_base_files)"

ctx="$(mktemp -d "${TMPDIR:-/tmp}/worldline-kind-node-base.XXXXXX")"
trap 'rm -rf -- "${ctx}"' EXIT
# kind's files: scripts and folders 0755, everything else 0644 (as kind's own Dockerfile sets them).
cp -r "${files}" "${ctx}/kind"
find "${ctx}/kind" -type d -exec chmod 0755 {} +
find "${ctx}/kind" -type f -exec chmod 0644 {} +
chmod 0755 "${ctx}/kind/usr/local/bin/"* "${ctx}/kind/kind/bin/"*
mkdir -p "${ctx}/worldline/etc/containerd" "${ctx}/worldline/etc/default"
sed "s/PAUSE_TAG/${PAUSE_VERSION}/" "${here}/node/containerd-config.toml" >"${ctx}/worldline/etc/containerd/config.toml"
cp "${here}/node/cni-template.conflist" "${ctx}/worldline/etc/containerd/cni-template.conflist"
cp "${here}/node/kubelet-default" "${ctx}/worldline/etc/default/kubelet"
chmod 0644 "${ctx}/worldline/etc/containerd/"* "${ctx}/worldline/etc/default/kubelet"
cp "${here}/node/Dockerfile" "${ctx}/Dockerfile"

hash="$( (cd "${ctx}" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; printf '%s recipe=%s\n' "${base_id}" "${RECIPE}") |
  sha256sum | cut -c1-12)"
image="worldline.local/kind-node-base:${DEBIAN_SUITE}-${hash}"
if docker image inspect "${image}" >/dev/null 2>&1; then
  printf '%s\n' "${image}"
  exit 0
fi
take_lock node-base
if ! docker image inspect "${image}" >/dev/null 2>&1; then
  started=${SECONDS}
  log "building ${image} (Debian packages from apt)"
  docker_build -q --build-arg "BASE_IMAGE=${base_image}" -t "${image}" "${ctx}" >&2
  log "built ${image} in $((SECONDS - started))s"
  # Earlier node bases (other input hashes) are no longer referenced by anything this project builds.
  docker image ls --format '{{.Repository}}:{{.Tag}}' worldline.local/kind-node-base | { grep -vxF "${image}" || true; } |
    while read -r old; do docker image rm "${old}" >/dev/null 2>&1 || true; done
fi
printf '%s\n' "${image}"
