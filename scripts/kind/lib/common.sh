# shellcheck shell=bash
# Shared bash helpers for the scripts/kind/ builders (sourced, never run): logging, Go on PATH, the cache
# root, a per-piece lock, and atomic install of a staged directory. Each builder caches one piece under
#   ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/kind/<piece>/<version>/   (with a `stamp` file)
# and skips the work when the stamp matches.

kind_here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(cd "${kind_here}/../.." && pwd)"
kind_cache="${WORLDLINE_CACHE:-${HOME}/.cache/worldline}/kind"
# shellcheck source=../../controlplane/versions.env
source "${repo_root}/scripts/controlplane/versions.env"
# shellcheck source=../versions.env
source "${kind_here}/versions.env"

log() { printf '[%s] kind/%s: %s\n' "$(date -u +%H:%M:%S)" "${log_name:-$(basename "$0")}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

use_go() {
  command -v go >/dev/null 2>&1 || { [[ -x /usr/local/go/bin/go ]] && PATH="/usr/local/go/bin:${PATH}"; }
  command -v go >/dev/null 2>&1 || die "go not found (need Go >= 1.24 on PATH or at /usr/local/go/bin)"
  export GOWORK=off GOTOOLCHAIN=local
}

# stamp_ok DIR WANT FILE...: DIR/stamp holds WANT and every FILE exists under DIR.
stamp_ok() {
  local dir=$1 want=$2 f
  shift 2
  [[ -f "${dir}/stamp" && "$(<"${dir}/stamp")" == "${want}" ]] || return 1
  for f in "$@"; do [[ -e "${dir}/${f}" ]] || return 1; done
}

# take_lock NAME: one builder per piece; the lock lives as long as the calling script (fd 9).
take_lock() {
  mkdir -p "${kind_cache}"
  exec 9>"${kind_cache}/.$1.lock"
  flock 9
}

# install_dir STAGE DEST: replace DEST by STAGE with renames only.
install_dir() {
  local stage=$1 dest=$2 old
  chmod 0755 "${stage}"
  mkdir -p "$(dirname "${dest}")"
  if [[ -e "${dest}" ]]; then
    old="${dest}.old.$$"
    mv -T -- "${dest}" "${old}"
    mv -T -- "${stage}" "${dest}"
    rm -rf -- "${old}"
  else
    mv -T -- "${stage}" "${dest}"
  fi
}

# docker_build ARGS...: `docker build` with the legacy builder (no buildx here), without its deprecation banner.
docker_build() {
  DOCKER_BUILDKIT=0 docker build "$@" 2> >(grep -v -e '^DEPRECATED: The legacy builder' -e 'BuildKit is currently disabled' \
    -e 'environment-variable\.$' -e '^[[:space:]]*$' >&2 || true)
}
