#!/usr/bin/env bash
# Deletes a kind cluster made by create-cluster.sh and what it left on the host.
#   scripts/kind/delete-cluster.sh NAME [CONFIG]
# With CONFIG, the host folders of its extraMounts (the nodes' stores and sample Roots) are emptied too.
# Also removes the docker network "kind" once no container uses it. Fails when a node container remains.
# Progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"
log_name=delete-cluster.sh

(($# == 1 || $# == 2)) || { printf 'usage: %s NAME [CONFIG]\n' "$0" >&2; exit 2; }
name=$1 config=${2:-}
[[ -z "${config}" || -f "${config}" ]] || die "no kind config at '${config}'"
kind="$("${here}/install-kind.sh")"
"${kind}" delete cluster --name "${name}" >&2
left="$(docker ps -aq --filter "label=io.x-k8s.kind.cluster=${name}")"
[[ -z "${left}" ]] || die "node containers of ${name} remain: ${left}"
rm -rf -- "${kind_cache}/clusters/${name}"
# kind leaves its docker network behind; drop it when no other cluster uses it.
if [[ "$(docker network inspect -f '{{len .Containers}}' kind 2>/dev/null || echo none)" == 0 ]]; then
  docker network rm kind >/dev/null
  log "removed the unused docker network 'kind'"
fi
if [[ -n "${config}" ]]; then
  while read -r d; do
    [[ "${d}" == /* && "${d}" != / ]] || continue
    if grep -qF " ${d}" /proc/self/mountinfo; then die "${d} still has mounts below it"; fi
    rm -rf -- "${d}"
    log "removed ${d}"
    # Empty parents that this project's configs introduce (…/worldline-kind/<config>/) go too.
    for p in "$(dirname "${d}")" "$(dirname "$(dirname "${d}")")"; do
      [[ "${p}" == */worldline-kind || "${p}" == */worldline-kind/* ]] || continue
      rmdir --ignore-fail-on-non-empty -- "${p}" 2>/dev/null || true
    done
  done < <(sed -n 's/^[[:space:]]*-\{0,1\}[[:space:]]*hostPath:[[:space:]]*"\{0,1\}\([^"#]*[^"#[:space:]]\)"\{0,1\}.*$/\1/p' "${config}")
fi
log "cluster ${name} deleted"
