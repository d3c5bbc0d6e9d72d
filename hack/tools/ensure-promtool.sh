#!/usr/bin/env bash
# Installs promtool (built from its Go module, github.com/prometheus/prometheus cmd/promtool: no
# release download) into keyward's tool cache, next to helm, and prints its path. Reuses a
# binary already there.
#   hack/tools/ensure-promtool.sh                        → prints .../tools/promtool-v0.316.0/promtool
#   PROMTOOL_MODULE_VERSION=v0.315.1 hack/tools/ensure-promtool.sh
# Prometheus 3.Y.Z is Go module version v0.3YY.Z. `go install pkg@version` can fail here (403 on
# some module lookups), so the build goes through a throwaway module that requires the exact
# version, resolves its dependencies with `go get`, then `go build`s the command.
# Tests find promtool through KEYWARD_PROMTOOL, else this cache path, else `promtool` on PATH.
set -euo pipefail

version="${PROMTOOL_MODULE_VERSION:-v0.316.0}"
cache="${KEYWARD_CACHE_DIR:-$HOME/.cache/keyward}"
dir="$cache/tools/promtool-$version"
bin="$dir/promtool"

if [[ -x "$bin" ]] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "ensure-promtool: go is not installed; it is needed to build promtool $version" >&2; exit 1; }

# v0.316.0 → 3.16.0, for `promtool --version`.
release="$(sed -E 's/^v0\.([0-9]+)([0-9]{2})\.([0-9]+).*$/\1.\2.\3/; s/\.0([0-9])\./.\1./' <<<"$version")"

# Build into a temporary directory and rename it into place, so a concurrent run never sees a
# half-written binary.
mkdir -p "$cache/tools"
tmp="$(mktemp -d "$cache/tools/promtool-$version.tmp-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/mod" "$tmp/out"
echo "ensure-promtool: building promtool $version (Prometheus $release) with $(go version | cut -d' ' -f3) (several minutes the first time)" >&2
(
  cd "$tmp/mod"
  cat >go.mod <<EOF
module keyward.local/tools/promtool

go 1.26
EOF
  # GOFLAGS from the environment (-mod=vendor, ...) must not change the build.
  export GOFLAGS=-mod=mod CGO_ENABLED=0
  go get "github.com/prometheus/prometheus/cmd/promtool@$version" >&2
  # remove_all_sd: promtool without the service-discovery plugins (cloud SDKs) it never uses for
  # `check rules` / `test rules`; it builds in a fraction of the time.
  go build -trimpath -tags remove_all_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Branch=HEAD" \
    -o "$tmp/out/promtool" github.com/prometheus/prometheus/cmd/promtool >&2
)
"$tmp/out/promtool" --version >/dev/null
rm -rf "$tmp/mod"
if ! mv -T "$tmp/out" "$dir" 2>/dev/null; then
  # Someone else finished first: theirs is as good as ours.
  [[ -x "$bin" ]] || { echo "ensure-promtool: could not place $bin" >&2; exit 1; }
fi
echo "$bin"
