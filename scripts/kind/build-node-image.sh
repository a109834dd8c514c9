#!/usr/bin/env bash
# Builds the kind node image worldline.local/kind-node:<KUBERNETES_VERSION> on this machine, from pieces that
# are each built and cached by version (see docs/kind-node-image.md):
#   build-node-base.sh            Debian base, systemd, containerd, runc, CNI plugins, kind's base files
#   build-kubernetes.sh           kubelet, kubeadm, kubectl (+ control-plane binaries) from k8s.io/kubernetes
#   build-crictl.sh               crictl
#   build-component-images.sh     the control-plane, kube-proxy, etcd, CoreDNS and pause image tars
# then assembles them the way `kind build node-image` does: start the base, run containerd inside, import
# every image tar into the k8s.io namespace, commit with kind's entrypoint. The image carries a label
# worldline.stamp naming all its inputs; when the image with that stamp exists, the script exits at once.
# Prints the image name on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
log_name=build-node-image.sh

readonly RECIPE=1
image="worldline.local/kind-node:${KUBERNETES_VERSION}"
started=${SECONDS}

"${here}/host-prep.sh"
base="$("${here}/build-node-base.sh")"
k8s_dir="$("${here}/build-kubernetes.sh")"
crictl_dir="$("${here}/build-crictl.sh")"
images_dir="$("${here}/build-component-images.sh")"
want="$(printf '%s|%s|%s|%s|recipe=%s' "${base}" "$(<"${k8s_dir}/stamp")" "$(<"${crictl_dir}/stamp")" \
  "$(<"${images_dir}/stamp")" "${RECIPE}" | sha256sum | cut -c1-16)"

image_ok() { [[ "$(docker image inspect -f '{{index .Config.Labels "worldline.stamp"}}' "${image}" 2>/dev/null)" == "${want}" ]]; }
image_ok && { log "${image} is up to date ($((SECONDS - started))s)"; printf '%s\n' "${image}"; exit 0; }
take_lock node-image
image_ok && { printf '%s\n' "${image}"; exit 0; }

log "assembling ${image} from ${base}"
cid="$(docker run -d --privileged --entrypoint=sleep "${base}" infinity)"
trap 'docker rm -f "${cid}" >/dev/null 2>&1 || true' EXIT
in_node() { docker exec "${cid}" "$@"; }

for b in kubelet kubeadm kubectl; do docker cp "${k8s_dir}/${b}" "${cid}:/usr/bin/${b}"; done
docker cp "${crictl_dir}/crictl" "${cid}:/usr/local/bin/crictl"
printf '%s\n' "${KUBERNETES_VERSION}" | docker exec -i "${cid}" tee /kind/version >/dev/null
in_node mkdir -p /kind/images
docker cp "${images_dir}/." "${cid}:/kind/images/"

# A containerd with only what an import needs (no CRI plugin, which would want the node's network).
printf 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n' | docker exec -i "${cid}" tee /kind/import-containerd.toml >/dev/null
docker exec -d "${cid}" containerd --config /kind/import-containerd.toml --log-level warn
for _ in $(seq 1 100); do in_node ctr version >/dev/null 2>&1 && break; sleep 0.2; done
in_node ctr version >/dev/null || die "containerd did not start inside the assembly container"
for tar in "${images_dir}"/*.tar; do
  log "importing $(basename "${tar}")"
  in_node ctr --namespace=k8s.io images import --all-platforms --no-unpack --digests "/kind/images/$(basename "${tar}")" >/dev/null
done

# Every image kubeadm will ask for must be there under that exact name (etcd at the pinned tag).
cat <<KUBEADM | docker exec -i "${cid}" tee /kind/images-check.yaml >/dev/null
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: ${KUBERNETES_VERSION}
etcd:
  local:
    imageTag: ${ETCD_VERSION#v}-0
KUBEADM
mapfile -t wanted < <(in_node kubeadm config images list --config /kind/images-check.yaml 2>/dev/null)
((${#wanted[@]} > 0)) || die "kubeadm config images list printed nothing"
have="$(in_node ctr --namespace=k8s.io images ls -q)"
for ref in "${wanted[@]}"; do
  grep -qxF "${ref}" <<<"${have}" || die "kubeadm wants ${ref}, which the node image lacks"
done
sandbox="$(in_node sed -n 's/^ *sandbox_image = "\(.*\)"/\1/p' /etc/containerd/config.toml)"
grep -qxF "${sandbox}" <<<"${have}" || die "containerd's sandbox_image ${sandbox} is not imported"
log "node holds ${#wanted[@]} images kubeadm asks for: ${wanted[*]}"

pid="$(in_node pidof containerd)"
in_node kill -TERM "${pid}"
for _ in $(seq 1 100); do in_node kill -0 "${pid}" 2>/dev/null || break; sleep 0.1; done
in_node rm -rf /kind/images /kind/import-containerd.toml /kind/images-check.yaml /run/containerd /tmp/*

old_id="$(docker image inspect -f '{{.Id}}' "${image}" 2>/dev/null || true)"
docker commit \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change 'CMD []' \
  --change "LABEL worldline.stamp=\"${want}\"" \
  "${cid}" "${image}" >/dev/null
image_ok || die "committed ${image} does not carry stamp ${want}"
# The image this one replaces is now untagged; drop it unless a container still uses it.
[[ -z "${old_id}" ]] || docker image rm "${old_id}" >/dev/null 2>&1 || true
log "built ${image} in $((SECONDS - started))s ($(docker image inspect -f '{{.Size}}' "${image}" | numfmt --to=iec))"
printf '%s\n' "${image}"
