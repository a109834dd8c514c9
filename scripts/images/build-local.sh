#!/usr/bin/env bash
# Builds the worldline image on a machine without a container registry: the repository's Dockerfile, as a
# user with internet builds it, but with BUILD_BASE and RUNTIME_BASE pointing at local equivalents of the
# public Node 20 images (node-bases.sh: a debootstrapped Debian minbase plus Node and npm from the npm
# registry). npm inside the build reaches the npm registry directly (containers here have egress to it);
# where egress intercepts TLS, the local build base trusts the host's extra CA (see node-bases.sh).
# Tags worldline.local/worldline:<package.json version> and worldline.local/worldline:dev. The bases are
# cached (skipped when their tag carries the expected stamp); the final build reuses docker's layer cache.
# Prints the versioned image name on stdout; progress on stderr.
#   WORLDLINE_NODE_VERSION=20.x.y   pin Node (default: the host's, else the newest 20.x)
#   WORLDLINE_IMAGE_NO_CACHE=1      rebuild the final image without docker's layer cache
#   WORLDLINE_IMAGE_CA_CERTS=FILE   the extra CA bundle for the build base (default: $NODE_EXTRA_CA_CERTS)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
# shellcheck source=lib.sh
source "${here}/lib.sh"

need_docker
lock_images
started=${SECONDS}
mapfile -t bases < <("${here}/node-bases.sh")
((${#bases[@]} == 2)) || die "node-bases.sh printed ${#bases[@]} image names, want 2"

version="$(sed -n 's/^  "version": "\([^"]*\)",$/\1/p' "${repo}/package.json" | head -n 1)"
[[ "${version}" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-.+][0-9A-Za-z.-]+)?$ ]] || die "cannot read a version from ${repo}/package.json (got '${version}')"
image="worldline.local/worldline:${version}"

cache_flags=()
[[ "${WORLDLINE_IMAGE_NO_CACHE:-0}" == 1 ]] && cache_flags=(--no-cache)
log "building ${image} from ${repo}/Dockerfile on ${bases[0]} and ${bases[1]}"
build_log="$(mktemp "${TMPDIR:-/tmp}/worldline-image-build.XXXXXX")"
trap 'rm -f -- "${build_log}"' EXIT
if ! DOCKER_BUILDKIT=0 docker build --force-rm "${cache_flags[@]}" \
  --build-arg "BUILD_BASE=${bases[0]}" --build-arg "RUNTIME_BASE=${bases[1]}" --build-arg "VERSION=${version}" \
  -t "${image}" -t "worldline.local/worldline:dev" -f "${repo}/Dockerfile" "${repo}" >"${build_log}" 2>&1; then
  tail -n 40 "${build_log}" >&2
  die "docker build failed (last lines above)"
fi
size="$(docker image inspect --format '{{ .Size }}' "${image}")"
log "built ${image} (also :dev), $((size / 1000000)) MB, in $((SECONDS - started))s"
printf '%s\n' "${image}"
