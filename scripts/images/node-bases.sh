#!/usr/bin/env bash
# Builds the two local Node base images the Dockerfile's BUILD_BASE and RUNTIME_BASE point at on machines
# without a container registry, from the Debian base (debian-base.sh) and Node + npm (node-dist.sh):
#   worldline.local/node:<node>-<suite>       BUILD_PACKAGES added (compilers and python3 for node-gyp)
#   worldline.local/node:<node>-<suite>-slim  RUNTIME_PACKAGES added; Node only (no npm, no headers: the
#                                             runtime stage runs node and nothing else)
# Hosts whose egress intercepts TLS trust an extra CA: the build base gets the bundle named by
# WORLDLINE_IMAGE_CA_CERTS (default: the host's NODE_EXTRA_CA_CERTS) as NODE_EXTRA_CA_CERTS, so npm ci
# inside `docker build` reaches the npm registry. The runtime base (and so the worldline image) never has it.
# Each is skipped when its tag exists with the expected worldline.stamp label. Prints the two image
# names on stdout (build base first, one a line); progress on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"
# shellcheck source=lib.sh
source "${here}/lib.sh"

readonly RECIPE=1
need_docker
debian="$("${here}/debian-base.sh")"
node_dir="$("${here}/node-dist.sh")"
node_version="$(sed -n 's/^node=\([^ ]*\) .*/\1/p' "${node_dir}/stamp")"
[[ -n "${node_version}" ]] || die "cannot read the node version from ${node_dir}/stamp"
debian_id="$(docker image inspect --format '{{ .Id }}' "${debian}")"

extra_ca="${WORLDLINE_IMAGE_CA_CERTS-${NODE_EXTRA_CA_CERTS:-}}"
if [[ -n "${extra_ca}" ]]; then
  [[ -f "${extra_ca}" ]] || die "extra CA bundle ${extra_ca} (WORLDLINE_IMAGE_CA_CERTS or NODE_EXTRA_CA_CERTS) is not a file"
  extra_ca_sum="$(sha256sum "${extra_ca}" | cut -d' ' -f1)"
fi
ctx="$(mktemp -d "${images_cache}/.node-base-context.XXXXXX")"
build_log="$(mktemp "${images_cache}/.node-base-build.XXXXXX")"
trap 'rm -rf -- "${ctx}" "${build_log}"' EXIT

# build_base TAG PACKAGES KIND: builds TAG unless it is cached with the same stamp. KIND=build: all of
# /usr/local and the host's extra CA; KIND=runtime: bin/node only.
build_base() {
  local tag="$1" packages="$2" kind="$3" stamp started ca_args=()
  stamp="debian=${debian_id} $(<"${node_dir}/stamp") packages=${packages} kind=${kind} recipe=${RECIPE}.${BASE_RECIPE}"
  rm -rf "${ctx:?}/usr" "${ctx}/extra-ca" && mkdir -p "${ctx}/extra-ca" "${ctx}/usr/local/bin"
  if [[ "${kind}" == build ]]; then
    cp -al "${node_dir}/usr/local/." "${ctx}/usr/local/"
  else
    cp -al "${node_dir}/usr/local/bin/node" "${ctx}/usr/local/bin/node"
  fi
  if [[ "${kind}" == build && -n "${extra_ca}" ]]; then
    cp -- "${extra_ca}" "${ctx}/extra-ca/bundle.crt"
    ca_args=(--build-arg "EXTRA_CA_FILE=/usr/local/share/worldline/extra-ca/bundle.crt")
    stamp+=" ca=${extra_ca_sum}"
  fi
  if image_has_stamp "${tag}" "${stamp}"; then printf '%s\n' "${tag}"; return 0; fi
  lock_images
  if image_has_stamp "${tag}" "${stamp}"; then printf '%s\n' "${tag}"; return 0; fi
  started=${SECONDS}
  log "building ${tag} (packages: ${packages:-none})"
  if ! DOCKER_BUILDKIT=0 docker build --force-rm \
    -f "${here}/node-base.Dockerfile" \
    --build-arg "DEBIAN_BASE=${debian}" --build-arg "PACKAGES=${packages}" "${ca_args[@]}" \
    --label "worldline.stamp=${stamp}" -t "${tag}" "${ctx}" >"${build_log}" 2>&1; then
    tail -n 40 "${build_log}" >&2
    die "docker build of ${tag} failed (last lines above)"
  fi
  image_has_stamp "${tag}" "${stamp}" || die "built ${tag} but its label does not read back"
  log "built ${tag} in $((SECONDS - started))s"
  printf '%s\n' "${tag}"
}

build_base "worldline.local/node:${node_version}-${DEBIAN_SUITE}" "${BUILD_PACKAGES}" build
build_base "worldline.local/node:${node_version}-${DEBIAN_SUITE}-slim" "${RUNTIME_PACKAGES}" runtime
