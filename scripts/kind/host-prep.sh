#!/usr/bin/env bash
# Prepares a Debian 12 host to build images and run kind clusters: installs Docker and the build tools from
# Debian's packages when missing, and starts dockerd when it is not running (hosts without systemd as PID 1
# have nobody else to start it). Host-specific workarounds live here and nowhere else:
#   - root without CAP_SYS_RESOURCE (bit 24 absent from the bounding set): dockerd gets the OCI runtime
#     wrapper scripts/kind/runc-without-sys-resource as its default runtime, or no --privileged container
#     (so no kind node) can start.
# Idempotent; safe to run before every build. Prints nothing on stdout; progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[%s] kind/host-prep.sh: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
[[ $(id -u) == 0 ]] || { log "ERROR: run as root (installs packages, starts dockerd)"; exit 1; }

need=()
for pkg in docker.io debootstrap jq iptables; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
if ((${#need[@]})); then
  log "installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

bounding=$((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)))
daemon_json=/etc/docker/daemon.json
want_json='{}'
if (((bounding >> 24 & 1) == 0)); then
  install -D -m 0755 "${here}/runc-without-sys-resource" /usr/local/libexec/worldline/runc-without-sys-resource
  want_json='{"runtimes":{"worldline-runc":{"path":"/usr/local/libexec/worldline/runc-without-sys-resource"}},"default-runtime":"worldline-runc"}'
  log "root lacks CAP_SYS_RESOURCE: dockerd's default runtime drops it from container specs"
fi
mkdir -p /etc/docker
have_json="$( [[ -f $daemon_json ]] && jq -cS . "$daemon_json" || echo '{}')"
changed=false
if [[ "$have_json" != "$(jq -cS . <<<"$want_json")" ]]; then
  printf '%s\n' "$want_json" | jq . >"$daemon_json"
  changed=true
fi

running() { docker info >/dev/null 2>&1; }
if running && $changed; then
  log "restarting dockerd for its new configuration"
  pkill -x dockerd || true
  for _ in $(seq 1 100); do pgrep -x dockerd >/dev/null || break; sleep 0.1; done
fi
if ! running; then
  log "starting dockerd (log: /var/log/worldline-dockerd.log)"
  setsid dockerd >>/var/log/worldline-dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 150); do running && break; sleep 0.2; done
  running || { log "ERROR: dockerd did not start; see /var/log/worldline-dockerd.log"; exit 1; }
fi
