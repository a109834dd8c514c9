# Shared helpers of scripts/images/*.sh (sourced, never run): logging, the cache root, the builders' lock,
# and the label check that decides whether a cached image can be reused.
# shellcheck shell=bash

images_cache="${WORLDLINE_CACHE:-${HOME}/.cache/worldline}/images"

log() { printf '[%s] images/%s: %s\n' "$(date -u +%H:%M:%S)" "${0##*/}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# lock_images: one builder at a time per cache root (fd 8 stays open until the script exits). A script run
# by a builder that holds the lock (WORLDLINE_IMAGES_LOCKED=1 in its environment) does not take it again.
lock_images() {
  [[ "${WORLDLINE_IMAGES_LOCKED:-0}" == 1 ]] && return 0
  mkdir -p "${images_cache}"
  exec 8>"${images_cache}/.build.lock"
  flock 8
  export WORLDLINE_IMAGES_LOCKED=1
}

# image_has_stamp IMAGE STAMP: true when IMAGE exists locally and its label worldline.stamp equals STAMP.
image_has_stamp() {
  local got
  got="$(docker image inspect --format '{{ index .Config.Labels "worldline.stamp" }}' "$1" 2>/dev/null)" || return 1
  [[ "${got}" == "$2" ]]
}

need_docker() {
  command -v docker >/dev/null 2>&1 || die "docker not found (on Debian: scripts/kind/host-prep.sh installs and starts it)"
  docker info >/dev/null 2>&1 || die "dockerd is not answering (run scripts/kind/host-prep.sh as root)"
}
