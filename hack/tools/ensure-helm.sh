#!/usr/bin/env bash
# Installs helm (built from its Go module: no release download) into keyward's tool cache,
# next to the control-plane binaries, and prints its path. Reuses a binary already there.
#   hack/tools/ensure-helm.sh            → prints .../tools/helm-v3.19.5-k8s/helm
#   HELM_VERSION=v3.19.0 hack/tools/ensure-helm.sh
# Tests find helm through KEYWARD_HELM, else this cache path, else `helm` on PATH.
set -euo pipefail

version="${HELM_VERSION:-v3.19.5}"
cache="${KEYWARD_CACHE_DIR:-$HOME/.cache/keyward}"
# "-k8s": built with the Kubernetes version ldflags below; a helm-<version> of before lacked them.
dir="$cache/tools/helm-$version-k8s"
bin="$dir/helm"

if [[ -x "$bin" ]] && "$bin" version --short >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "ensure-helm: go is not installed; it is needed to build helm $version" >&2; exit 1; }

# Build into a temporary directory and rename it into place, so a concurrent run never sees a
# half-written binary.
mkdir -p "$cache/tools"
tmp="$(mktemp -d "$cache/tools/helm-$version.tmp-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "ensure-helm: building helm $version with $(go version | cut -d' ' -f3) (a few minutes the first time)" >&2
# helm's own Makefile sets the version through ldflags; without them `helm version` says v3.x-dirty-ish.
# It also sets the Kubernetes version helm assumes without a cluster (`helm template`, `helm lint`,
# checked against a chart's kubeVersion) from the k8s.io/client-go it builds with: v0.Y.Z → 1.Y.
# Without them that default is 1.20, and a chart needing a newer Kubernetes would not render.
gomod="$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "helm.sh/helm/v3@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
client_go="$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v\([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p' "$gomod")"
read -r k8s_major k8s_minor <<<"$client_go"
[[ -n "$k8s_minor" ]] || { echo "ensure-helm: no k8s.io/client-go in helm $version's go.mod ($gomod)" >&2; exit 1; }
k8s_major=$((k8s_major + 1))
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=$k8s_major -X $pkg.k8sVersionMinor=$k8s_minor"
done
CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$version" >&2
"$tmp/helm" version --short >/dev/null
if ! mv -T "$tmp" "$dir" 2>/dev/null; then
  # Someone else finished first: theirs is as good as ours.
  [[ -x "$bin" ]] || { echo "ensure-helm: could not place $bin" >&2; exit 1; }
fi
echo "$bin"
