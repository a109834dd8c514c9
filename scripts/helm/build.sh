#!/usr/bin/env bash
# Builds the helm CLI from the Go module proxy (helm.sh/helm/v3, pinned by scripts/helm/versions.env) and
# caches it by version outside the work tree:
#   ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/helm/<HELM_VERSION>/{helm,stamp}
# Idempotent: when the cache is complete and its stamp matches, it exits at once. Otherwise it builds
# helm.sh/helm/v3/cmd/helm in a temporary wrapper module with the same version ldflags as helm's Makefile,
# and installs atomically (build into a temp dir, rename). Prints the path of the helm binary on stdout;
# progress goes to stderr. Modelled on scripts/controlplane/build.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"
: "${HELM_VERSION:?versions.env must set HELM_VERSION}"

# Bump when the build recipe changes so existing caches are rebuilt.
readonly RECIPE=1
cache_root="${WORLDLINE_CACHE:-${HOME}/.cache/worldline}/helm"
dest="${cache_root}/${HELM_VERSION}"
stamp_want="helm=${HELM_VERSION} recipe=${RECIPE}"

cache_ok() {
  [[ -x "${dest}/helm" && -f "${dest}/stamp" ]] || return 1
  [[ "$(<"${dest}/stamp")" == "${stamp_want}" ]]
}

if cache_ok; then
  printf '%s\n' "${dest}/helm"
  exit 0
fi

log() { printf '[%s] helm/build.sh: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ "${HELM_VERSION}" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "HELM_VERSION must look like v3.N.M, got '${HELM_VERSION}'"
command -v go >/dev/null 2>&1 || { [[ -x /usr/local/go/bin/go ]] && PATH="/usr/local/go/bin:${PATH}"; }
command -v go >/dev/null 2>&1 || die "go not found (helm ${HELM_VERSION} is built from the Go module proxy; install Go >= 1.26 on PATH or at /usr/local/go/bin)"

mkdir -p "${cache_root}"
# One builder at a time per cache root; re-check after taking the lock (another process may have finished).
exec 9>"${cache_root}/.build.lock"
flock 9
if cache_ok; then
  printf '%s\n' "${dest}/helm"
  exit 0
fi

started=${SECONDS}
work="$(mktemp -d "${TMPDIR:-/tmp}/worldline-helm-build.XXXXXX")"
stage="$(mktemp -d "${cache_root}/.stage-${HELM_VERSION}.XXXXXX")"
cleanup() { rm -rf -- "${work}" "${stage}"; }
trap cleanup EXIT

export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
export GOWORK=off
export GOTOOLCHAIN=local

log "go: $(go version)"
log "cold build of helm ${HELM_VERSION} into ${dest} (work dir ${work})"

helm_json="$(cd "${work}" && go mod download -json "helm.sh/helm/v3@${HELM_VERSION}")"
helm_gomod="$(printf '%s\n' "${helm_json}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "${helm_gomod}" ]] || die "could not locate go.mod of helm.sh/helm/v3@${HELM_VERSION}"
go_directive="$(awk '$1 == "go" { print $2; exit }' "${helm_gomod}")"
# helm's Makefile derives the Kubernetes version `helm lint`/`template` assume from its client-go version.
client_go="$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "${helm_gomod}")"
[[ "${client_go}" =~ ^v0\.([0-9]+)\.[0-9]+$ ]] || die "cannot read k8s.io/client-go version from ${helm_gomod} (got '${client_go}')"
k8s_minor="${BASH_REMATCH[1]}"

{
  printf 'module worldline.local/helm-tools\n\n'
  printf 'go %s\n\n' "${go_directive}"
  printf 'require helm.sh/helm/v3 %s\n' "${HELM_VERSION}"
} >"${work}/go.mod"

ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitCommit=go-module-proxy"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${k8s_minor}"
done

log "building helm.sh/helm/v3/cmd/helm (a few minutes on two cores)"
(
  cd "${work}"
  go build -trimpath -ldflags "${ldflags}" -o "${stage}/helm" helm.sh/helm/v3/cmd/helm
)

got="$("${stage}/helm" version --template '{{.Version}}')"
[[ "${got}" == "${HELM_VERSION}" ]] || die "helm version says '${got}', want '${HELM_VERSION}'"

printf '%s\n' "${stamp_want}" >"${stage}/stamp"
chmod 0755 "${stage}"
if [[ -e "${dest}" ]]; then
  old="${cache_root}/.old-${HELM_VERSION}.$$"
  mv -T -- "${dest}" "${old}"
  mv -T -- "${stage}" "${dest}"
  rm -rf -- "${old}"
else
  mv -T -- "${stage}" "${dest}"
fi
log "installed ${dest} in $((SECONDS - started))s"
printf '%s\n' "${dest}/helm"
