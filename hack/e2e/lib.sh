# Shared by the hack/e2e scripts (sourced, not run). Everything built is cached under
# $KEYWARD_CACHE_DIR/e2e (default ~/.cache/keyward/e2e), keyed by a hash of its inputs.
# shellcheck shell=bash

E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$E2E_DIR/../.." && pwd)"
CACHE_ROOT="${KEYWARD_CACHE_DIR:-$HOME/.cache/keyward}"
E2E_CACHE="$CACHE_ROOT/e2e"

K8S_VERSION=v1.36.3          # hack/e2e/go/kube/go.mod (the control plane's release)
KIND_VERSION=v0.32.0         # hack/e2e/go/kind/go.mod
ARGOCD_VERSION=v3.6.1        # hack/e2e/go/argocd/go.mod
ARGOCD_GOTOOLCHAIN=go1.27.4  # argo-cd v3.6's go.mod says go 1.27.0
CLUSTER_NAME="${KEYWARD_E2E_CLUSTER:-keyward-e2e}"
NICE=(nice -n 10)

mkdir -p "$E2E_CACHE"

log() { echo "[e2e $(date -u +%T)] $*" >&2; }
die() { log "error: $*"; exit 1; }

# timed NAME cmd...: runs cmd, logs its duration and appends it to $E2E_CACHE/timings.log.
timed() {
  local name=$1 t0=$SECONDS
  shift
  log "$name ..."
  "$@"
  log "$name done in $((SECONDS - t0))s"
  echo "$(date -u -Is) $name $((SECONDS - t0))s" >>"$E2E_CACHE/timings.log"
}

# hash_of FILE...: a short sha256 of the files' names and contents.
hash_of() {
  local f
  for f in "$@"; do printf '%s\n' "${f#"$REPO_ROOT"/}"; cat "$f"; done | sha256sum | cut -c1-16
}

# The Docker CLI that talks to the local dockerd: Debian's (matching the daemon) when installed.
docker_cli() {
  if [[ -x /usr/bin/docker ]]; then echo /usr/bin/docker; else command -v docker; fi
}
docker() { command "$(docker_cli)" "$@"; }

# go_build MODULE_DIR OUT_DIR LDFLAGS PACKAGE...: CGO_ENABLED=0 -trimpath like the control
# plane's build (test/controlplane/binaries.ts), so both share Go's build cache.
go_build() {
  local dir=$1 out=$2 ldflags=$3
  shift 3
  (cd "$dir" && CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false "${NICE[@]}" \
    go build -trimpath -ldflags "$ldflags" -o "$out" "$@")
}

# with_lock NAME cmd...: one builder at a time per cache entry (flock on $E2E_CACHE/NAME.lock).
with_lock() {
  local name=$1
  shift
  (
    exec 9>"$E2E_CACHE/$name.lock"
    flock 9
    "$@"
  )
}

# The kubeconfig of the e2e cluster this machine's scripts create.
cluster_kubeconfig() { echo "$E2E_CACHE/cluster/$CLUSTER_NAME.kubeconfig"; }
