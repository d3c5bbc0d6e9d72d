#!/usr/bin/env bash
# Installs helm (built from its Go module: no release download) into keyward's tool cache,
# next to the control-plane binaries, and prints its path. Reuses a binary already there.
#   hack/tools/ensure-helm.sh            → prints .../tools/helm-v3.19.5/helm
#   HELM_VERSION=v3.19.0 hack/tools/ensure-helm.sh
# Tests find helm through KEYWARD_HELM, else this cache path, else `helm` on PATH.
set -euo pipefail

version="${HELM_VERSION:-v3.19.5}"
cache="${KEYWARD_CACHE_DIR:-$HOME/.cache/keyward}"
dir="$cache/tools/helm-$version"
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
CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
  "helm.sh/helm/v3/cmd/helm@$version" >&2
"$tmp/helm" version --short >/dev/null
if ! mv -T "$tmp" "$dir" 2>/dev/null; then
  # Someone else finished first: theirs is as good as ours.
  [[ -x "$bin" ]] || { echo "ensure-helm: could not place $bin" >&2; exit 1; }
fi
echo "$bin"
