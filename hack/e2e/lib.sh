# Shared by the hack/e2e scripts (sourced, not run). Everything built is cached under
# $KEYWARD_CACHE_DIR/e2e (default ~/.cache/keyward/e2e), keyed by a hash of its inputs.
# shellcheck shell=bash

E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$E2E_DIR/../.." && pwd)"
CACHE_ROOT="${KEYWARD_CACHE_DIR:-$HOME/.cache/keyward}"
E2E_CACHE="$CACHE_ROOT/e2e"

# The Kubernetes release the kind cluster runs: the one hack/e2e/go/kube/go.mod builds, generated
# from the oldest supported minor's control-plane module (hack/controlplane-go/update.ts --e2e).
K8S_VERSION=$(sed -n 's|^[[:space:]]*k8s.io/kubernetes \(v[0-9][^ ]*\).*|\1|p' "$E2E_DIR/go/kube/go.mod")
[[ $K8S_VERSION =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "hack/e2e/go/kube/go.mod requires no k8s.io/kubernetes release" >&2; exit 1; }
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

# controlplane_bin: the directory of kube-apiserver, kube-controller-manager, kubectl and etcd
# built at the e2e's Kubernetes minor (test/controlplane/binaries.ts), which may differ from the
# one npm test runs on (hack/controlplane-go/test-version).
controlplane_bin() {
  (cd "$REPO_ROOT" && KEYWARD_K8S_MINOR="${K8S_VERSION%.*}" npx --no-install node test/controlplane/cli.ts build) |
    sed -n 's/^binaries (.*) in //p'
}

# go_build MODULE_DIR OUT_DIR LDFLAGS PACKAGE...: CGO_ENABLED=0 -trimpath like the control
# plane's build (test/controlplane/binaries.ts), so both share Go's build cache.
go_build() {
  local dir=$1 out=$2 ldflags=$3
  shift 3
  (cd "$dir" && CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false "${NICE[@]}" \
    go build -trimpath -ldflags "$ldflags" -o "$out" "$@")
}

# module_source MODULE_DIR MODULE: the directory of MODULE's source at the version MODULE_DIR's
# go.mod requires, downloading it when needed. `go list -m -f {{.Dir}}` prints an empty line with
# exit 0 when the module is not in the module cache (a fresh GOMODCACHE beside cached binaries).
module_source() {
  local dir=$1 mod=$2 src
  src=$(cd "$dir" && GOWORK=off go mod download -json "$mod" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -n $src && -d $src ]] || die "go mod download $mod (in $dir) gave no source directory"
  echo "$src"
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

# Debian root filesystems (debootstrap, minbase) that the offline images start FROM.
SUITE=bookworm
NODE_PKGS=systemd,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins,socat,ebtables
COMP_PKGS=iptables,nftables,conntrack,ca-certificates,iproute2
# The base of node:24-bookworm's local stand-in (base-images.sh): ca-certificates, as the public
# image has, for the CA bundle of keyward's image.
BASE_PKGS=ca-certificates
debian_mirror() {
  local m=${KEYWARD_E2E_DEBIAN_MIRROR:-}
  [[ -n $m ]] || m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [[ -n $m ]] || m=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  echo "${m:-http://deb.debian.org/debian}"
}

# rootfs_image NAME [PACKAGES]: a debootstrap'd root filesystem imported into dockerd as
# keyward-e2e/rootfs-NAME:<hash of suite and packages>; prints the tag (built once, locked).
rootfs_image() {
  local name=$1 pkgs=${2:-} tag
  tag="keyward-e2e/rootfs-$name:$(echo "$SUITE $pkgs" | sha256sum | cut -c1-12)"
  docker image inspect "$tag" >/dev/null 2>&1 || with_lock "rootfs-$name" _rootfs_image "$tag" "$name" "$pkgs"
  echo "$tag"
}
_rootfs_image() {
  local tag=$1 name=$2 pkgs=$3 dir
  docker image inspect "$tag" >/dev/null 2>&1 && return 0
  command -v debootstrap >/dev/null || [[ -x /usr/sbin/debootstrap ]] || die "debootstrap is not installed (hack/e2e/ensure-docker.sh installs it)"
  dir=$(mktemp -d "$E2E_CACHE/rootfs-$name.XXXXXX")
  timed "debootstrap $name" "${NICE[@]}" debootstrap --variant=minbase ${pkgs:+--include="$pkgs"} "$SUITE" "$dir" "$(debian_mirror)" >"$dir.log" 2>&1 ||
    { tail -n 20 "$dir.log" >&2; rm -rf "$dir"; die "debootstrap $name failed (log: $dir.log)"; }
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
  tar -C "$dir" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$tag" >/dev/null
  rm -rf "$dir" "$dir.log"
}

# The kubeconfig of the e2e cluster this machine's scripts create.
cluster_kubeconfig() { echo "$E2E_CACHE/cluster/$CLUSTER_NAME.kubeconfig"; }
