#!/usr/bin/env bash
# Builds the e2e's Go tools from the modules in hack/e2e/go (no release downloads: the Go module
# proxy only), each cached under ~/.cache/keyward/e2e by a hash of its go.mod + go.sum:
#   build-tools.sh kind            → prints the kind binary
#   build-tools.sh node-binaries   → prints a directory: kubeadm kubelet kube-proxy kube-scheduler
#                                    crictl coredns pause (for the offline node image)
#   build-tools.sh argocd          → prints a directory: argocd (+ its argv[0] links and the
#                                    repo-server's git-verify-wrapper.sh)
# `go install pkg@version` is refused here for some modules (403 on the version list, replace
# directives): each tool has a throwaway module that requires the exact version instead.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

GO_DIR="$E2E_DIR/go"

k8s_ldflags() {
  local v=${K8S_VERSION#v} flags="-s -w" pkg
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "$flags"
}

# build_into DIR NAME fn: runs fn TMPDIR once per DIR (locked), renames the result into place.
build_into() {
  local dir=$1 name=$2 fn=$3
  [[ -f $dir/.complete ]] && return 0
  with_lock "$name" _build_into "$dir" "$fn"
}
_build_into() {
  local dir=$1 fn=$2
  [[ -f $dir/.complete ]] && return 0
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  "$fn" "$dir.tmp"
  touch "$dir.tmp/.complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

build_kind() { timed "go build kind $KIND_VERSION" go_build "$GO_DIR/kind" "$1/kind" "-s -w" sigs.k8s.io/kind; }

build_node_binaries() {
  local out=$1 src
  timed "go build kubeadm kubelet kube-proxy kube-scheduler $K8S_VERSION" go_build "$GO_DIR/kube" "$out/" "$(k8s_ldflags)" \
    k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler
  timed "go build crictl" go_build "$GO_DIR/crictl" "$out/crictl" "-s -w" sigs.k8s.io/cri-tools/cmd/crictl
  timed "go build coredns" go_build "$GO_DIR/coredns" "$out/coredns" "-s -w" github.com/coredns/coredns
  # pause: Kubernetes' own pause.c, static.
  src=$(module_source "$GO_DIR/kube" "k8s.io/kubernetes@$K8S_VERSION")
  [[ -f $src/build/pause/linux/pause.c ]] || die "no pause.c in $src"
  gcc -Os -static -o "$out/pause" "$src/build/pause/linux/pause.c" -DVERSION="$K8S_VERSION"
}

build_argocd() {
  local out=$1 src
  (cd "$GO_DIR/argocd" && GOTOOLCHAIN=$ARGOCD_GOTOOLCHAIN go version >/dev/null) # fetches the toolchain
  (
    export GOTOOLCHAIN=$ARGOCD_GOTOOLCHAIN
    timed "go build argocd $ARGOCD_VERSION" go_build "$GO_DIR/argocd" "$out/argocd" \
      "-s -w -X github.com/argoproj/argo-cd/v3/common.version=${ARGOCD_VERSION#v} -X github.com/argoproj/argo-cd/v3/common.gitTag=$ARGOCD_VERSION" \
      github.com/argoproj/argo-cd/v3/cmd
  )
  # One binary for every component: the role comes from argv[0].
  for n in argocd-application-controller argocd-repo-server; do ln -s argocd "$out/$n"; done
  # The repo-server runs git-verify-wrapper.sh on every manifest generation, even with GPG off.
  src=$(GOTOOLCHAIN=$ARGOCD_GOTOOLCHAIN module_source "$GO_DIR/argocd" github.com/argoproj/argo-cd/v3)
  install -m 0755 "$src/hack/git-verify-wrapper.sh" "$out/git-verify-wrapper.sh"
  mkdir -p "$out/manifests"
  cp "$src/manifests/crds/application-crd.yaml" "$src/manifests/crds/appproject-crd.yaml" \
    "$src/manifests/base/config/argocd-cm.yaml" "$src/manifests/base/config/argocd-secret.yaml" \
    "$src/manifests/base/config/argocd-rbac-cm.yaml" "$out/manifests/"
}

cmd=${1:-}
case $cmd in
  kind)
    dir="$E2E_CACHE/kind-$KIND_VERSION-$(hash_of "$GO_DIR/kind/go.mod" "$GO_DIR/kind/go.sum")"
    build_into "$dir" kind build_kind
    echo "$dir/kind"
    ;;
  node-binaries)
    dir="$E2E_CACHE/node-binaries-$K8S_VERSION-$(hash_of "$GO_DIR"/{kube,crictl,coredns}/go.{mod,sum} "$0")"
    build_into "$dir" node-binaries build_node_binaries
    echo "$dir"
    ;;
  argocd)
    dir="$E2E_CACHE/argocd-$ARGOCD_VERSION-$(hash_of "$GO_DIR/argocd/go.mod" "$GO_DIR/argocd/go.sum")"
    build_into "$dir" argocd build_argocd
    echo "$dir"
    ;;
  *) echo "usage: $0 kind|node-binaries|argocd" >&2; exit 2 ;;
esac
