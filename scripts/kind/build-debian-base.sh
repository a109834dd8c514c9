#!/usr/bin/env bash
# Builds the Debian base image every kind-related image here starts from: `debootstrap --variant=minbase`
# of DEBIAN_SUITE (scripts/kind/versions.env) into a folder, packed as a tarball, imported into the local
# docker engine as worldline.local/kind-debian:<suite>. No container registry is involved.
# Cache: ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/debian/<suite>-r<recipe>/rootfs.tar; the image is
# re-imported from it when docker lost it. Prints the image name on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/lib/common.sh"

readonly RECIPE=1
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
image="worldline.local/kind-debian:${DEBIAN_SUITE}"
dest="${kind_cache}/debian/${DEBIAN_SUITE}-r${RECIPE}"
want="suite=${DEBIAN_SUITE} variant=minbase recipe=${RECIPE}"

image_ok() { [[ "$(docker image inspect -f '{{index .Config.Labels "worldline.stamp"}}' "${image}" 2>/dev/null)" == "${want}" ]]; }
image_ok && { printf '%s\n' "${image}"; exit 0; }
take_lock debian
image_ok && { printf '%s\n' "${image}"; exit 0; }

if ! stamp_ok "${dest}" "${want}" rootfs.tar; then
  command -v debootstrap >/dev/null || die "debootstrap missing (scripts/kind/host-prep.sh installs it)"
  started=${SECONDS}
  mkdir -p "$(dirname "${dest}")"
  stage="$(mktemp -d "$(dirname "${dest}")/.stage.XXXXXX")"
  trap 'rm -rf -- "${stage}"' EXIT
  log "debootstrap --variant=minbase ${DEBIAN_SUITE} from ${mirror}"
  nice -n 10 debootstrap --variant=minbase "${DEBIAN_SUITE}" "${stage}/rootfs" "${mirror}" >&2
  # Keep the image small and reproducible-ish: no apt lists, no caches, no logs of the bootstrap.
  rm -rf "${stage}/rootfs/var/lib/apt/lists/"* "${stage}/rootfs/var/cache/apt/"*.bin \
    "${stage}/rootfs/var/cache/apt/archives/"*.deb "${stage}/rootfs/var/log/"*
  tar --numeric-owner --xattrs -C "${stage}/rootfs" -cf "${stage}/rootfs.tar" .
  rm -rf "${stage}/rootfs"
  printf '%s\n' "${want}" >"${stage}/stamp"
  install_dir "${stage}" "${dest}"
  trap - EXIT
  log "rootfs cached in ${dest} ($((SECONDS - started))s)"
fi

log "importing ${dest}/rootfs.tar as ${image}"
docker import \
  --change "LABEL worldline.stamp=\"${want}\"" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' \
  "${dest}/rootfs.tar" "${image}" >/dev/null
image_ok || die "imported ${image} does not carry the expected stamp"
printf '%s\n' "${image}"
