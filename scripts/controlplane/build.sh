#!/usr/bin/env bash
# Builds the real test control plane (kube-apiserver, kubectl, etcd) from the Go module proxy, pinned by
# scripts/controlplane/versions.env and cached by version outside the work tree:
#   ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/controlplane/<KUBERNETES_VERSION>/{kube-apiserver,kubectl,etcd,stamp}
# Idempotent: when the cache is complete and its stamp matches, it exits at once. Otherwise it builds in a
# temporary wrapper module (k8s.io/kubernetes plus a generated `replace` block mapping every k8s.io/* staging
# module required at v0.0.0 to v0.<minor>.<patch>), and installs atomically (build into a temp dir, rename).
# Prints the cache directory on stdout; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"
: "${KUBERNETES_VERSION:?versions.env must set KUBERNETES_VERSION}"
: "${ETCD_VERSION:?versions.env must set ETCD_VERSION}"

# Bump when the build recipe changes so existing caches are rebuilt.
readonly RECIPE=1
cache_root="${WORLDLINE_CACHE:-${HOME}/.cache/worldline}/controlplane"
dest="${cache_root}/${KUBERNETES_VERSION}"
stamp_want="kubernetes=${KUBERNETES_VERSION} etcd=${ETCD_VERSION} recipe=${RECIPE}"

cache_ok() {
  local f
  for f in kube-apiserver kubectl etcd; do
    [[ -x "${dest}/${f}" ]] || return 1
  done
  [[ -f "${dest}/stamp" ]] || return 1
  [[ "$(<"${dest}/stamp")" == "${stamp_want}" ]]
}

if cache_ok; then
  printf '%s\n' "${dest}"
  exit 0
fi

log() { printf '[%s] controlplane/build.sh: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || { [[ -x /usr/local/go/bin/go ]] && PATH="/usr/local/go/bin:${PATH}"; }
command -v go >/dev/null 2>&1 || die "go not found (need Go >= 1.24 on PATH or at /usr/local/go/bin)"

[[ "${KUBERNETES_VERSION}" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "KUBERNETES_VERSION must look like v1.N.M, got '${KUBERNETES_VERSION}'"
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
k8s_minor="${BASH_REMATCH[1]}"

mkdir -p "${cache_root}"
# One builder at a time per cache root; re-check after taking the lock (another process may have finished).
exec 9>"${cache_root}/.build.lock"
flock 9
if cache_ok; then
  printf '%s\n' "${dest}"
  exit 0
fi

started=${SECONDS}
work="$(mktemp -d "${TMPDIR:-/tmp}/worldline-controlplane-build.XXXXXX")"
stage="$(mktemp -d "${cache_root}/.stage-${KUBERNETES_VERSION}.XXXXXX")"
cleanup() { rm -rf -- "${work}" "${stage}"; }
trap cleanup EXIT

export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
export GOWORK=off
export GOTOOLCHAIN=local

log "go: $(go version)"
log "cold build of kubernetes ${KUBERNETES_VERSION} + etcd ${ETCD_VERSION} into ${dest} (work dir ${work})"

# --- read k8s.io/kubernetes's go.mod ---------------------------------------------------------------
log "downloading k8s.io/kubernetes@${KUBERNETES_VERSION} metadata"
k8s_json="$(cd "${work}" && go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}")"
k8s_gomod="$(printf '%s\n' "${k8s_json}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
k8s_info="$(printf '%s\n' "${k8s_json}" | sed -n 's/^[[:space:]]*"Info": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "${k8s_gomod}" ]] || die "could not locate go.mod of k8s.io/kubernetes@${KUBERNETES_VERSION}"

# Verify the etcd pin against what kubernetes itself requires.
required_etcd="$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v3\./ { print $2; exit }' "${k8s_gomod}")"
[[ -n "${required_etcd}" ]] || required_etcd="$(awk '$1 == "go.etcd.io/etcd/client/v3" && $2 ~ /^v3\./ { print $2; exit }' "${k8s_gomod}")"
[[ -n "${required_etcd}" ]] || die "k8s.io/kubernetes@${KUBERNETES_VERSION} go.mod names no go.etcd.io/etcd/{server,client}/v3"
[[ "${required_etcd}" == "${ETCD_VERSION}" ]] || die "versions.env ETCD_VERSION=${ETCD_VERSION} but k8s.io/kubernetes@${KUBERNETES_VERSION} requires etcd ${required_etcd}; fix versions.env"
log "etcd pin ${ETCD_VERSION} matches kubernetes go.mod"

# Every k8s.io/* module kubernetes requires at v0.0.0 (or replaces with ./staging/...) is a staging module
# published at v0.<minor>.<patch>.
mapfile -t staging_mods < <(
  awk '
    $1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }
    $1 ~ /^k8s\.io\// && $2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }
  ' "${k8s_gomod}" | LC_ALL=C sort -u
)
((${#staging_mods[@]} > 0)) || die "found no k8s.io staging modules in ${k8s_gomod}"
log "generated replace block for ${#staging_mods[@]} k8s.io staging modules -> ${staging_version}"

# --- kube-apiserver + kubectl ----------------------------------------------------------------------
mkdir -p "${work}/k8s" "${work}/etcd" "${stage}"
{
  printf 'module worldline.local/controlplane-tools/kubernetes\n\n'
  printf 'go %s\n\n' "$(awk '$1 == "go" { print $2; exit }' "${k8s_gomod}")"
  printf 'require k8s.io/kubernetes %s\n\n' "${KUBERNETES_VERSION}"
  printf 'replace (\n'
  for m in "${staging_mods[@]}"; do
    printf '\t%s => %s %s\n' "${m}" "${m}" "${staging_version}"
  done
  printf ')\n'
} >"${work}/k8s/go.mod"

build_date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "${k8s_info}" 2>/dev/null || true)"
[[ -n "${build_date}" ]] || build_date="1970-01-01T00:00:00Z"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION}"
  ldflags+=" -X ${pkg}.gitMajor=1"
  ldflags+=" -X ${pkg}.gitMinor=${k8s_minor}"
  ldflags+=" -X ${pkg}.gitTreeState=archive"
  ldflags+=" -X ${pkg}.buildDate=${build_date}"
  ldflags+=" -X ${pkg}.gitCommit=go-module-proxy"
done

log "building kube-apiserver and kubectl (this is the long part)"
(
  cd "${work}/k8s"
  go build -trimpath -ldflags "${ldflags}" -o "${stage}/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
)
log "built kube-apiserver and kubectl ($((SECONDS - started))s so far)"

# --- etcd ------------------------------------------------------------------------------------------
# go.etcd.io/etcd/server/v3 is itself a main package (main.go calls etcdmain.Main); build it in its own
# wrapper module so etcd gets its own pinned dependency versions, not kubernetes's.
{
  printf 'module worldline.local/controlplane-tools/etcd\n\n'
  printf 'go 1.24\n\n'
  printf 'require go.etcd.io/etcd/server/v3 %s\n' "${ETCD_VERSION}"
} >"${work}/etcd/go.mod"
log "building etcd ${ETCD_VERSION}"
(
  cd "${work}/etcd"
  go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=go-module-proxy" \
    -o "${stage}/etcd" go.etcd.io/etcd/server/v3
)

# --- smoke check and atomic install ----------------------------------------------------------------
got="$("${stage}/kube-apiserver" --version)"
[[ "${got}" == "Kubernetes ${KUBERNETES_VERSION}" ]] || die "kube-apiserver --version says '${got}', want 'Kubernetes ${KUBERNETES_VERSION}'"
"${stage}/kubectl" version --client >/dev/null || die "kubectl does not run"
got="$("${stage}/etcd" --version | sed -n 's/^etcd Version: //p')"
[[ "v${got}" == "${ETCD_VERSION}" ]] || die "etcd --version says '${got}', want '${ETCD_VERSION#v}'"

printf '%s\n' "${stamp_want}" >"${stage}/stamp"
chmod 0755 "${stage}"
if [[ -e "${dest}" ]]; then
  old="${cache_root}/.old-${KUBERNETES_VERSION}.$$"
  mv -T -- "${dest}" "${old}"
  mv -T -- "${stage}" "${dest}"
  rm -rf -- "${old}"
else
  mv -T -- "${stage}" "${dest}"
fi
log "installed ${dest} in $((SECONDS - started))s"
printf '%s\n' "${dest}"
