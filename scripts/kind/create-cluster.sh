#!/usr/bin/env bash
# Creates (or reuses) a kind cluster for worldline and prints the path of its kubeconfig on stdout.
#   scripts/kind/create-cluster.sh NAME CONFIG        e.g. create-cluster.sh worldline kind-config/two-node.yaml
# Steps: host-prep.sh; kind and the node image (cached builds, fast when cached); the CONFIG's host folders
# (hostPath of extraMounts) are created and must be real host filesystems; `kind create cluster`; routes
# between the nodes' pod subnets and a masquerade for pod traffic leaving the cluster (there is no kindnetd,
# see docs/kind-node-image.md); then waits until every node is Ready and CoreDNS is available.
# Idempotent: a healthy cluster of that NAME running the current node image, with every node container
# registered as a Node, is reused (routes re-applied); an unhealthy, half-created or outdated one is
# deleted and created again. Refuses while a node of another cluster mounts one of CONFIG's host folders
# (two clusters from one config would share a store). Progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
log_name=create-cluster.sh

usage() { printf 'usage: %s NAME CONFIG\n' "$0" >&2; exit 2; }
(($# == 2)) || usage
name=$1 config=$2
[[ "${name}" =~ ^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$ ]] || die "cluster NAME must be lowercase letters, digits and '-', got '${name}'"
[[ -f "${config}" ]] || die "no kind config at '${config}'"
config="$(cd "$(dirname "${config}")" && pwd)/$(basename "${config}")"
started=${SECONDS}

# The etcd image in the node is tagged from ETCD_VERSION; the config must ask kubeadm for that tag.
etcd_tag="${ETCD_VERSION#v}-0"
grep -Eq "^[[:space:]]*imageTag:[[:space:]]*\"?${etcd_tag//./\\.}\"?[[:space:]]*$" "${config}" ||
  die "${config} must set ClusterConfiguration etcd.local.imageTag: ${etcd_tag} (ETCD_VERSION in scripts/controlplane/versions.env)"
pod_subnet="$(sed -n 's/^[[:space:]]*podSubnet:[[:space:]]*"\{0,1\}\([0-9./]*\)"\{0,1\}[[:space:]]*$/\1/p' "${config}" | head -n 1)"
pod_subnet="${pod_subnet:-10.244.0.0/16}"
want_nodes="$(grep -cE '^[[:space:]]*-[[:space:]]*role:' "${config}" || true)"
((want_nodes > 0)) || want_nodes=1

"${here}/host-prep.sh"
kind="$("${here}/install-kind.sh")"
image="$("${here}/build-node-image.sh")"
image_id="$(docker image inspect -f '{{.Id}}' "${image}")"
while read -r named; do
  [[ "${named}" == "${image}" ]] || die "${config} names node image '${named}', but the pinned one is ${image}"
done < <(sed -n 's/^[[:space:]]*image:[[:space:]]*"\{0,1\}\([^"#[:space:]]*\)"\{0,1\}.*$/\1/p' "${config}")
kubectl="$("${here}/build-kubernetes.sh")/kubectl"

state="${kind_cache}/clusters/${name}"
kubeconfig="${state}/kubeconfig"
mkdir -p "${state}"
exec 8>"${state}/.lock"
flock 8
k() { "${kubectl}" --kubeconfig "${kubeconfig}" "$@"; }

mapfile -t host_dirs < <(sed -n 's/^[[:space:]]*-\{0,1\}[[:space:]]*hostPath:[[:space:]]*"\{0,1\}\([^"#]*[^"#[:space:]]\)"\{0,1\}.*$/\1/p' "${config}")
for d in "${host_dirs[@]}"; do
  [[ "${d}" == /* ]] || die "extraMounts hostPath must be absolute, got '${d}'"
  mkdir -p "${d}"
  fs="$(stat -f -c %T "${d}")"
  [[ "${fs}" != overlayfs ]] || die "${d} is on overlayfs; worldline's store needs a real host filesystem"
done

nodes() { docker ps -a --filter "label=io.x-k8s.kind.cluster=${name}" --format '{{.Names}}'; }

# Two clusters made from one config would share its host folders: two node-agents on one store, each
# deleting the other's state. Refuse while a node of another cluster mounts one of this config's folders.
while read -r other; do
  [[ -n "${other}" ]] || continue
  other_cluster="$(docker inspect -f '{{index .Config.Labels "io.x-k8s.kind.cluster"}}' "${other}")"
  [[ "${other_cluster}" != "${name}" ]] || continue
  while read -r src; do
    for d in "${host_dirs[@]}"; do
      [[ "${src}" != "${d}" ]] ||
        die "host folder ${d} of ${config} is mounted by node ${other} of cluster ${other_cluster}; delete that cluster first (scripts/kind/delete-cluster.sh ${other_cluster})"
    done
  done < <(docker inspect -f '{{range .Mounts}}{{println .Source}}{{end}}' "${other}")
done < <(docker ps -a --filter label=io.x-k8s.kind.cluster --format '{{.Names}}')

healthy() {
  local n count=0
  while read -r n; do
    [[ -n "${n}" ]] || continue
    count=$((count + 1))
    [[ "$(docker inspect -f '{{.State.Running}} {{.Image}}' "${n}")" == "true ${image_id}" ]] || return 1
  done < <(nodes)
  ((count == want_nodes)) || return 1
  "${kind}" get kubeconfig --name "${name}" >"${kubeconfig}.new" 2>/dev/null || return 1
  mv -f "${kubeconfig}.new" "${kubeconfig}"
  k get --raw /readyz >/dev/null 2>&1 || return 1
  # Every node container must also be a registered Node: a cluster whose creation was cut short (the
  # machine stopped during `kind create cluster`) has running containers and a healthy API server, but a
  # worker that never joined, and would never get a PodCIDR.
  local registered
  registered="$(k get nodes -o name 2>/dev/null | sed 's|^node/||' | sort)" || return 1
  [[ "${registered}" == "$(nodes | sort)" ]]
}

# route_pod_subnets: every node routes every other node's PodCIDR via that node's address on the kind
# network, and masquerades pod traffic that leaves the pod subnet.
route_pod_subnets() {
  local n m cidr
  local -A cidr_of=() ip_of=()
  for _ in $(seq 1 120); do
    local missing=0
    while read -r n; do
      cidr="$(k get node "${n}" -o jsonpath='{.spec.podCIDR}' 2>/dev/null || true)"
      [[ -n "${cidr}" ]] || { missing=1; continue; }
      cidr_of[${n}]="${cidr}"
    done < <(nodes)
    ((missing == 0)) && break
    sleep 1
  done
  ((${#cidr_of[@]} == want_nodes)) || die "not every node got a PodCIDR from the controller-manager"
  for n in "${!cidr_of[@]}"; do
    ip_of[${n}]="$(docker inspect -f '{{(index .NetworkSettings.Networks "kind").IPAddress}}' "${n}")"
    [[ -n "${ip_of[${n}]}" ]] || die "node ${n} has no address on the docker network 'kind'"
  done
  for n in "${!cidr_of[@]}"; do
    for m in "${!cidr_of[@]}"; do
      [[ "${n}" != "${m}" ]] || continue
      docker exec "${n}" ip route replace "${cidr_of[${m}]}" via "${ip_of[${m}]}"
    done
    docker exec "${n}" sh -c 'iptables -t nat -C POSTROUTING -s "$1" ! -d "$1" -j MASQUERADE 2>/dev/null ||
      iptables -t nat -A POSTROUTING -s "$1" ! -d "$1" -j MASQUERADE' sh "${pod_subnet}"
    log "node ${n}: pods ${cidr_of[${n}]}, address ${ip_of[${n}]}"
  done
}

if "${kind}" get clusters 2>/dev/null | grep -qxF "${name}"; then
  if healthy; then
    log "reusing cluster ${name}"
  else
    log "cluster ${name} is unhealthy or runs an older node image: deleting it"
    "${kind}" delete cluster --name "${name}" >&2
  fi
fi
if ! "${kind}" get clusters 2>/dev/null | grep -qxF "${name}"; then
  log "creating cluster ${name} from ${config} on ${image}"
  create_started=${SECONDS}
  "${kind}" create cluster --name "${name}" --config "${config}" --image "${image}" \
    --kubeconfig "${kubeconfig}" >&2
  log "kind create cluster took $((SECONDS - create_started))s"
fi
"${kind}" get kubeconfig --name "${name}" >"${kubeconfig}.new"
mv -f "${kubeconfig}.new" "${kubeconfig}"

route_pod_subnets
k wait --for=condition=Ready nodes --all --timeout=300s >&2
k -n kube-system rollout status deployment/coredns --timeout=300s >&2
log "cluster ${name} ready in $((SECONDS - started))s"
printf '%s\n' "${kubeconfig}"
