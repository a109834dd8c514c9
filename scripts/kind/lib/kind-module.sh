# shellcheck shell=bash
# Locates kind's node base files (images/base/files of the Go module sigs.k8s.io/kind at KIND_VERSION) in
# the Go module cache, downloading the module when absent (sourced, never run; needs lib/common.sh).
#   kind_base_files   prints the folder
kind_base_files() {
  local dir
  use_go
  dir="$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kind@${KIND_VERSION}" | jq -r '.Dir // empty')"
  [[ -n "${dir}" && -f "${dir}/images/base/files/usr/local/bin/entrypoint" ]] ||
    die "sigs.k8s.io/kind@${KIND_VERSION} has no images/base/files/usr/local/bin/entrypoint"
  printf '%s\n' "${dir}/images/base/files"
}
