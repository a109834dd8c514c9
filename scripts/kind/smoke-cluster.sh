#!/usr/bin/env bash
# Checks from the inside that a cluster made by create-cluster.sh can run worldline:
#   scripts/kind/smoke-cluster.sh NAME KUBECONFIG
# On every node: an ordinary pod (busybox httpd) and a privileged pod with the node's /var/lib/worldline
# mounted. Then: the first and the last node's pods fetch each other by IP, and both fetch a Service (backed by
# the last node's pod) by its DNS name through CoreDNS; on every node the privileged pod mounts overlayfs with
# upper and work dirs in /var/lib/worldline and runs `unshare -U -m -p -f --map-root-user` (what the
# node-agent needs). Removes its objects at
# the end. Exit status 0 only when every check passed. Progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
log_name=smoke-cluster.sh

(($# == 2)) || { printf 'usage: %s NAME KUBECONFIG\n' "$0" >&2; exit 2; }
name=$1 kubeconfig=$2
[[ -f "${kubeconfig}" ]] || die "no kubeconfig at '${kubeconfig}'"
kind="$("${here}/install-kind.sh")"
kubectl="$("${here}/build-kubernetes.sh")/kubectl"
k() { "${kubectl}" --kubeconfig "${kubeconfig}" "$@"; }
image="$("${here}/build-probe-image.sh")"
"${kind}" load docker-image --name "${name}" "${image}" >&2

ns=worldline-smoke
k delete namespace "${ns}" --ignore-not-found --wait=true >&2
k create namespace "${ns}" >&2
trap 'k delete namespace "${ns}" --ignore-not-found --wait=false >&2 || true' EXIT
mapfile -t node_names < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
((${#node_names[@]} > 0)) || die "the cluster has no nodes"

pod() { # pod NAME NODE PRIVILEGED(true|false) COMMAND_JSON
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: { name: $1, namespace: ${ns}, labels: { app: $1 } }
spec:
  nodeSelector: { kubernetes.io/hostname: $2 }
  tolerations: [{ operator: Exists }]
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${image}
      imagePullPolicy: Never
      command: $4
      securityContext: { privileged: $3 }
      volumeMounts: [{ name: store, mountPath: /var/lib/worldline }]
  volumes: [{ name: store, hostPath: { path: /var/lib/worldline, type: Directory } }]
---
YAML
}
last=$((${#node_names[@]} - 1))
serve='["sh", "-c", "mkdir -p /www && hostname >/www/index.html && exec busybox httpd -f -p 8080 -h /www"]'
{
  for i in "${!node_names[@]}"; do
    pod "plain-${i}" "${node_names[i]}" false "${serve}"
    pod "privileged-${i}" "${node_names[i]}" true '["sleep", "infinity"]'
  done
  cat <<YAML
apiVersion: v1
kind: Service
metadata: { name: web, namespace: ${ns} }
spec:
  selector: { app: plain-${last} }
  ports: [{ port: 80, targetPort: 8080 }]
YAML
} | k apply -f - >&2
k -n "${ns}" wait --for=condition=Ready pods --all --timeout=180s >&2
k -n "${ns}" get pods -o wide >&2

failed=0
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if out="$("$@" 2>&1)"; then
    log "ok: ${what}"
  else
    log "FAIL: ${what}: ${out}"
    failed=1
  fi
}
expect_out() { # expect_out WANT COMMAND...: COMMAND prints WANT
  local want=$1 got
  shift
  got="$("$@")" || return 1
  [[ "${got}" == "${want}" ]] || { printf 'printed %q, want %q\n' "${got}" "${want}"; return 1; }
}

# An HTTP GET in bash (/dev/tcp resolves names with glibc, so through the pod's resolv.conf and CoreDNS):
# fetch HOST PORT prints the response body. (Debian's busybox wget crashes here.)
# shellcheck disable=SC2016 # expanded by bash in the pod
fetch='exec 3<>"/dev/tcp/$1/$2"; printf "GET / HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3; sed "1,/^\r$/d" <&3'
last_ip="$(k -n "${ns}" get pod "plain-${last}" -o jsonpath='{.status.podIP}')"
for i in "${!node_names[@]}"; do
  [[ "$(k -n "${ns}" get pod "plain-${i}" -o jsonpath='{.spec.nodeName}')" == "${node_names[i]}" ]] ||
    { log "FAIL: plain-${i} is not on ${node_names[i]}"; failed=1; }
done
check "pod on ${node_names[0]} reaches pod ${last_ip} on ${node_names[last]} by IP" \
  expect_out "plain-${last}" k -n "${ns}" exec plain-0 -- timeout 10 bash -c "${fetch}" fetch "${last_ip}" 8080
check "pod on ${node_names[0]} reaches Service web.${ns}.svc.cluster.local (pod on ${node_names[last]})" \
  expect_out "plain-${last}" k -n "${ns}" exec plain-0 -- timeout 10 bash -c "${fetch}" fetch "web.${ns}.svc.cluster.local" 80
if ((last > 0)); then
  first_ip="$(k -n "${ns}" get pod plain-0 -o jsonpath='{.status.podIP}')"
  check "pod on ${node_names[last]} reaches pod ${first_ip} on ${node_names[0]} by IP" \
    expect_out plain-0 k -n "${ns}" exec "plain-${last}" -- timeout 10 bash -c "${fetch}" fetch "${first_ip}" 8080
  check "pod on ${node_names[last]} reaches Service web by DNS name (itself, through the Service)" \
    expect_out "plain-${last}" k -n "${ns}" exec "plain-${last}" -- timeout 10 bash -c "${fetch}" fetch "web.${ns}.svc.cluster.local" 80
fi
# shellcheck disable=SC2016 # expanded by the shell in the pod
overlay='set -e
d=/var/lib/worldline/smoke-$(hostname)
rm -rf "$d"; mkdir -p "$d/lower" "$d/upper" "$d/work" "$d/merged"
echo lower >"$d/lower/a"
mount -t overlay overlay -o "lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work" "$d/merged"
echo upper >"$d/merged/b"
test "$(cat "$d/merged/a")" = lower
test "$(cat "$d/upper/b")" = upper
umount "$d/merged"
rm -rf "$d"'
for i in "${!node_names[@]}"; do
  check "privileged pod on ${node_names[i]}: overlayfs with upper/work dirs in /var/lib/worldline" \
    k -n "${ns}" exec "privileged-${i}" -- sh -c "${overlay}"
  check "privileged pod on ${node_names[i]}: unshare -U -m -p -f --map-root-user" \
    expect_out 0 k -n "${ns}" exec "privileged-${i}" -- unshare -U -m -p -f --map-root-user id -u
done
((failed == 0)) || die "smoke checks failed"
log "all smoke checks passed on ${#node_names[@]} node(s)"
