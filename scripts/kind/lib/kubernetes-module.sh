# shellcheck shell=bash
# How this project builds k8s.io/kubernetes commands from the Go module proxy (sourced, never run): a
# wrapper module that requires k8s.io/kubernetes at KUBERNETES_VERSION with a generated `replace` block
# mapping every k8s.io/* staging module (required at v0.0.0 or replaced by ./staging/...) to
# v0.<minor>.<patch>, and ldflags that stamp the version into component-base and client-go. The recipe is
# the one of scripts/controlplane/build.sh (same flags, so the Go build cache is shared between them).
#
# Needs: log/die (lib/common.sh), go on PATH, KUBERNETES_VERSION set.
#   k8s_write_wrapper_module DIR   writes DIR/go.mod; sets k8s_gomod (kubernetes's own go.mod) and k8s_ldflags
#   k8s_build_env                  exports the build environment (static, trimmed, module mode)
#   etcd_write_wrapper_module DIR  writes DIR/go.mod requiring go.etcd.io/etcd/server/v3 at ETCD_VERSION (in a
#                                  module of its own, so etcd keeps its own dependency versions); sets etcd_ldflags

k8s_build_env() {
  export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local
}

k8s_write_wrapper_module() {
  local dir=$1 json info staging_version minor build_date pkg m
  [[ "${KUBERNETES_VERSION}" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] ||
    die "KUBERNETES_VERSION must look like v1.N.M, got '${KUBERNETES_VERSION}'"
  minor="${BASH_REMATCH[1]}"
  staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
  mkdir -p "${dir}"
  json="$(cd "${dir}" && go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}")"
  k8s_gomod="$(jq -r '.GoMod // empty' <<<"${json}")"
  info="$(jq -r '.Info // empty' <<<"${json}")"
  [[ -f "${k8s_gomod}" ]] || die "could not locate go.mod of k8s.io/kubernetes@${KUBERNETES_VERSION}"
  local -a mods
  mapfile -t mods < <(
    awk '
      $1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }
      $1 ~ /^k8s\.io\// && $2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }
    ' "${k8s_gomod}" | LC_ALL=C sort -u
  )
  ((${#mods[@]} > 0)) || die "found no k8s.io staging modules in ${k8s_gomod}"
  {
    printf 'module worldline.local/controlplane-tools/kubernetes\n\n'
    printf 'go %s\n\n' "$(awk '$1 == "go" { print $2; exit }' "${k8s_gomod}")"
    printf 'require k8s.io/kubernetes %s\n\n' "${KUBERNETES_VERSION}"
    printf 'replace (\n'
    for m in "${mods[@]}"; do printf '\t%s => %s %s\n' "${m}" "${m}" "${staging_version}"; done
    printf ')\n'
  } >"${dir}/go.mod"
  build_date="$(jq -r '.Time // empty' "${info}" 2>/dev/null || true)"
  [[ -n "${build_date}" ]] || build_date="1970-01-01T00:00:00Z"
  k8s_ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION}"
    k8s_ldflags+=" -X ${pkg}.gitMajor=1"
    k8s_ldflags+=" -X ${pkg}.gitMinor=${minor}"
    k8s_ldflags+=" -X ${pkg}.gitTreeState=archive"
    k8s_ldflags+=" -X ${pkg}.buildDate=${build_date}"
    k8s_ldflags+=" -X ${pkg}.gitCommit=go-module-proxy"
  done
}

etcd_write_wrapper_module() {
  local dir=$1
  mkdir -p "${dir}"
  printf 'module worldline.local/controlplane-tools/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
    "${ETCD_VERSION}" >"${dir}/go.mod"
  # shellcheck disable=SC2034 # read by the caller
  etcd_ldflags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=go-module-proxy"
}
