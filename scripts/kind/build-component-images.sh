#!/usr/bin/env bash
# Builds the container images a kubeadm control plane pulls, from pieces built here, and saves each as an
# image tar for the node's containerd, tagged exactly as kubeadm asks for them (registry.k8s.io/<name>:<tag>;
# see `kubeadm config images list`):
#   kube-apiserver, kube-controller-manager, kube-scheduler   static binaries on an empty base
#   kube-proxy                                                on worldline.local/kind-debian with nftables,
#                                                             iptables and conntrack from Debian
#   etcd (tag <ETCD_VERSION>-0), coredns/coredns, pause       static binaries on an empty base
# The etcd tag follows ETCD_VERSION (the pin the test control plane uses), which may differ from kubeadm's
# default; kind-config/*.yaml tell kubeadm the tag. Cache:
#   ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/images/<KUBERNETES_VERSION>-r<recipe>/<name>.tar
# Prints the cache directory on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"

readonly RECIPE=1
etcd_tag="${ETCD_VERSION#v}-0"
dest="${kind_cache}/images/${KUBERNETES_VERSION}-r${RECIPE}"
want="kubernetes=${KUBERNETES_VERSION} etcd=${ETCD_VERSION} coredns=${COREDNS_VERSION} pause=${PAUSE_VERSION} suite=${DEBIAN_SUITE} recipe=${RECIPE}"
names=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns pause)
tars=()
for n in "${names[@]}"; do tars+=("${n}.tar"); done
stamp_ok "${dest}" "${want}" "${tars[@]}" && { printf '%s\n' "${dest}"; exit 0; }

k8s_dir="$("${here}/build-kubernetes.sh")"
etcd_dir="$("${here}/build-etcd.sh")"
coredns_dir="$("${here}/build-coredns.sh")"
pause_dir="$("${here}/build-pause.sh")"
debian_image="$("${here}/build-debian-base.sh")"

take_lock images
stamp_ok "${dest}" "${want}" "${tars[@]}" && { printf '%s\n' "${dest}"; exit 0; }
started=${SECONDS}
mkdir -p "$(dirname "${dest}")"
stage="$(mktemp -d "$(dirname "${dest}")/.stage.XXXXXX")"
ctx_root="$(mktemp -d "${TMPDIR:-/tmp}/worldline-kind-images.XXXXXX")"
built=()
cleanup() {
  rm -rf -- "${stage}" "${ctx_root}"
  ((${#built[@]} == 0)) || docker image rm "${built[@]}" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# static_image NAME REF BINARY_PATH_IN_IMAGE SOURCE [ENTRYPOINT_JSON]: an image holding one static binary,
# /tmp, and a passwd/group with root and nobody.
static_image() {
  local name=$1 ref=$2 path=$3 src=$4 entry=${5:-} ctx="${ctx_root}/$1"
  mkdir -p "${ctx}/rootfs/tmp" "${ctx}/rootfs/etc" "${ctx}/rootfs$(dirname "${path}")"
  chmod 1777 "${ctx}/rootfs/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"${ctx}/rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"${ctx}/rootfs/etc/group"
  install -m 0755 "${src}" "${ctx}/rootfs${path}"
  {
    printf 'FROM scratch\nCOPY rootfs/ /\n'
    printf 'ENV PATH=/usr/local/bin:/usr/bin:/bin\n'
    [[ -z "${entry}" ]] || printf 'ENTRYPOINT %s\n' "${entry}"
  } >"${ctx}/Dockerfile"
  build_and_save "${name}" "${ref}" "${ctx}"
}

build_and_save() {
  local name=$1 ref=$2 ctx=$3
  log "image ${ref}"
  docker_build -q -t "${ref}" "${ctx}" >/dev/null
  built+=("${ref}")
  docker save -o "${stage}/${name}.tar" "${ref}"
}

for c in kube-apiserver kube-controller-manager kube-scheduler; do
  static_image "${c}" "registry.k8s.io/${c}:${KUBERNETES_VERSION}" "/usr/local/bin/${c}" "${k8s_dir}/${c}"
done
static_image etcd "registry.k8s.io/etcd:${etcd_tag}" /usr/local/bin/etcd "${etcd_dir}/etcd"
static_image coredns "registry.k8s.io/coredns/coredns:${COREDNS_VERSION}" /coredns "${coredns_dir}/coredns" '["/coredns"]'
static_image pause "registry.k8s.io/pause:${PAUSE_VERSION}" /pause "${pause_dir}/pause" '["/pause"]'

# kube-proxy drives the kernel through nft (nftables mode, which kind-config/ selects) or iptables, and
# conntrack; those come from Debian.
ctx="${ctx_root}/kube-proxy"
mkdir -p "${ctx}"
install -m 0755 "${k8s_dir}/kube-proxy" "${ctx}/kube-proxy"
cat >"${ctx}/Dockerfile" <<DOCKERFILE
FROM ${debian_image}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      nftables iptables conntrack \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/* /usr/share/doc/* /usr/share/man/*
COPY kube-proxy /usr/local/bin/kube-proxy
DOCKERFILE
build_and_save kube-proxy "registry.k8s.io/kube-proxy:${KUBERNETES_VERSION}" "${ctx}"

printf '%s\n' "${want}" >"${stage}/stamp"
install_dir "${stage}" "${dest}"
log "image tars in ${dest} ($((SECONDS - started))s)"
printf '%s\n' "${dest}"
