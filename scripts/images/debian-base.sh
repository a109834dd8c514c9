#!/usr/bin/env bash
# Makes the local Debian base image: `debootstrap --variant=minbase` of DEBIAN_SUITE (versions.env) into a
# temporary folder, imported into the local engine as worldline.local/debian:<suite>-minbase. It stands in
# for the public debian:<suite>-slim for machines without a container registry. Skips the work when the
# tag exists with the expected worldline.stamp label. Prints the image name on stdout; progress on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"
# shellcheck source=lib.sh
source "${here}/lib.sh"

readonly RECIPE=2
image="worldline.local/debian:${DEBIAN_SUITE}-minbase"
stamp="debian=${DEBIAN_SUITE},variant=minbase,mirror=${DEBIAN_MIRROR},recipe=${RECIPE}"

need_docker
if image_has_stamp "${image}" "${stamp}"; then printf '%s\n' "${image}"; exit 0; fi
lock_images
if image_has_stamp "${image}" "${stamp}"; then printf '%s\n' "${image}"; exit 0; fi

[[ $(id -u) == 0 ]] || die "debootstrap needs root"
command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found (apt-get install debootstrap)"

started=${SECONDS}
work="$(mktemp -d "${images_cache}/.debian-${DEBIAN_SUITE}.XXXXXX")"
trap 'rm -rf -- "${work}"' EXIT
debs="${images_cache}/debootstrap-debs/${DEBIAN_SUITE}"
mkdir -p "${debs}"

log "debootstrap --variant=minbase ${DEBIAN_SUITE} from ${DEBIAN_MIRROR} (downloaded packages kept in ${debs})"
if ! debootstrap --variant=minbase --cache-dir="${debs}" "${DEBIAN_SUITE}" "${work}/rootfs" "${DEBIAN_MIRROR}" >"${work}/debootstrap.out" 2>&1; then
  tail -n 30 "${work}/debootstrap.out" >&2
  die "debootstrap failed (last lines above)"
fi

# The suite's updates and security fixes, as debian:<suite> has them, then nothing left over from the bootstrap.
cat >"${work}/rootfs/etc/apt/sources.list" <<SOURCES
deb ${DEBIAN_MIRROR} ${DEBIAN_SUITE} main
deb ${DEBIAN_MIRROR} ${DEBIAN_SUITE}-updates main
deb ${DEBIAN_MIRROR%/debian}/debian-security ${DEBIAN_SUITE}-security main
SOURCES
rm -rf "${work}/rootfs/var/cache/apt/archives/"*.deb "${work}/rootfs/var/lib/apt/lists/"* "${work}/rootfs/debootstrap"
# Like debian:<suite>-slim: no manual pages, documentation (copyright files stay) or translations, now or
# from packages installed later.
cat >"${work}/rootfs/etc/dpkg/dpkg.cfg.d/worldline-slim" <<'EXCLUDES'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EXCLUDES
find "${work}/rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "${work}/rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "${work}/rootfs/usr/share/man/"* "${work}/rootfs/usr/share/groff/"* "${work}/rootfs/usr/share/info/"* \
  "${work}/rootfs/usr/share/lintian/"* "${work}/rootfs/usr/share/locale/"*
: >"${work}/rootfs/etc/hostname"

log "importing the root filesystem as ${image}"
tar -C "${work}/rootfs" --numeric-owner -cf - . | docker import \
  --change "LABEL worldline.stamp=${stamp}" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["bash"]' \
  - "${image}" >/dev/null
image_has_stamp "${image}" "${stamp}" || die "imported ${image} but its label does not read back"
log "made ${image} in $((SECONDS - started))s"
printf '%s\n' "${image}"
