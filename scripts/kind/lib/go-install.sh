# shellcheck shell=bash
# shellcheck disable=SC2154 # kind_cache, log and die come from lib/common.sh
# Builds one Go command with `go install PKG@VERSION` into the kind cache (sourced, never run; needs
# lib/common.sh). go_install_cached PIECE VERSION BIN PKG [LDFLAGS]:
#   ${kind_cache}/PIECE/VERSION/BIN, skipped when its stamp matches; static (CGO_ENABLED=0), trimmed,
#   installed atomically; prints the cache directory on stdout.
go_install_cached() {
  local piece=$1 version=$2 bin=$3 pkg=$4 ldflags="-s -w ${5:-}"
  local dest="${kind_cache}/${piece}/${version}" want="${pkg}@${version} ldflags=${ldflags} recipe=1" stage
  stamp_ok "${dest}" "${want}" "${bin}" && { printf '%s\n' "${dest}"; return 0; }
  take_lock "${piece}"
  stamp_ok "${dest}" "${want}" "${bin}" && { printf '%s\n' "${dest}"; return 0; }
  use_go
  mkdir -p "$(dirname "${dest}")"
  stage="$(mktemp -d "$(dirname "${dest}")/.stage.XXXXXX")"
  log "go install ${pkg}@${version}"
  if ! (cd "${stage}" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN="${stage}" \
    nice -n 10 go install -trimpath -ldflags "${ldflags}" "${pkg}@${version}"); then
    rm -rf -- "${stage}"
    die "go install ${pkg}@${version} failed"
  fi
  [[ -x "${stage}/${bin}" ]] || { rm -rf -- "${stage}"; die "go install ${pkg}@${version} made no ${bin}"; }
  printf '%s\n' "${want}" >"${stage}/stamp"
  install_dir "${stage}" "${dest}"
  printf '%s\n' "${dest}"
}
