#!/usr/bin/env bash
# Makes sure a Docker engine answers: installs Debian's docker.io (and debootstrap, which the
# offline node and base images need) when missing, and starts dockerd when nothing listens on
# its socket (machines without systemd). Idempotent; quiet when all is there.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

missing=()
command -v dockerd >/dev/null || [[ -x /usr/sbin/dockerd ]] || missing+=(docker.io)
command -v debootstrap >/dev/null || [[ -x /usr/sbin/debootstrap ]] || missing+=(debootstrap)
if ((${#missing[@]} > 0)); then
  [[ $(id -u) == 0 ]] || die "missing ${missing[*]}: install them (apt-get install ${missing[*]})"
  timed "apt-get install ${missing[*]}" bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null' _ "${missing[@]}"
fi

if ! docker info >/dev/null 2>&1; then
  [[ $(id -u) == 0 ]] || die "dockerd is not running and this is not root: start it"
  log "starting dockerd (log: $E2E_CACHE/dockerd.log)"
  nohup /usr/sbin/dockerd >"$E2E_CACHE/dockerd.log" 2>&1 &
  for _ in $(seq 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { tail -n 20 "$E2E_CACHE/dockerd.log" >&2; die "dockerd did not come up"; }
fi
