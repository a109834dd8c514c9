#!/usr/bin/env bash
# Builds worldline.local/kind-probe:<suite>, a small image for checking a kind cluster from the inside:
# the Debian base (build-debian-base.sh) plus busybox (its httpd) and util-linux (mount,
# unshare). No registry is reachable here, so smoke-cluster.sh loads it into the nodes with `kind load`.
# Rebuilt only when the base image changes. Prints the image name on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"

readonly RECIPE=1
base="$("${here}/build-debian-base.sh")"
image="worldline.local/kind-probe:${DEBIAN_SUITE}"
want="$(docker image inspect -f '{{.Id}}' "${base}") recipe=${RECIPE}"
[[ "$(docker image inspect -f '{{index .Config.Labels "worldline.stamp"}}' "${image}" 2>/dev/null)" == "${want}" ]] &&
  { printf '%s\n' "${image}"; exit 0; }
take_lock probe-image
ctx="$(mktemp -d "${TMPDIR:-/tmp}/worldline-kind-probe.XXXXXX")"
trap 'rm -rf -- "${ctx}"' EXIT
cat >"${ctx}/Dockerfile" <<DOCKERFILE
FROM ${base}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends busybox util-linux \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/* /usr/share/doc/* /usr/share/man/*
LABEL worldline.stamp="${want}"
DOCKERFILE
log "building ${image}"
docker_build -q -t "${image}" "${ctx}" >/dev/null
printf '%s\n' "${image}"
