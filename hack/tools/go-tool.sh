#!/usr/bin/env bash
# Builds a Go command from the module proxy (no release download) into keyward's tool cache and
# prints its path; reuses a binary already there. The ensure-*.sh scripts call it.
#   hack/tools/go-tool.sh NAME MODULE VERSION PACKAGE [LDFLAGS]
#   → ~/.cache/keyward/tools/NAME-VERSION/NAME
# The build goes through a throwaway module that requires the exact version (`go install
# pkg@version` is refused for some modules here), resolves its dependencies with `go get`, then
# `go build`s the command. It is built into a temporary directory and renamed into place, so a
# concurrent run never sees a half-written binary.
set -euo pipefail

name=$1 module=$2 version=$3 pkg=$4 ldflags=${5:-"-s -w"}
cache="${KEYWARD_CACHE_DIR:-$HOME/.cache/keyward}"
dir="$cache/tools/$name-$version"
bin="$dir/$name"

if [[ -x "$bin" && -f "$dir/.complete" ]]; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "$name: go is not installed; it is needed to build $name $version" >&2; exit 1; }

mkdir -p "$cache/tools"
tmp="$(mktemp -d "$cache/tools/$name-$version.tmp-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/mod" "$tmp/out"
echo "$name: building $pkg@$version with $(go version | cut -d' ' -f3)" >&2
(
  cd "$tmp/mod"
  printf 'module keyward.local/tools/%s\n\ngo 1.24\n' "$name" >go.mod
  # GOFLAGS from the environment (-mod=vendor, ...) must not change the build.
  export GOFLAGS=-mod=mod CGO_ENABLED=0
  go get "$module@$version" >&2
  go build -trimpath -ldflags "$ldflags" -o "$tmp/out/$name" "$pkg" >&2
)
touch "$tmp/out/.complete"
rm -rf "$tmp/mod"
if ! mv -T "$tmp/out" "$dir" 2>/dev/null; then
  # Someone else finished first: theirs is as good as ours.
  [[ -x "$bin" ]] || { echo "$name: could not place $bin" >&2; exit 1; }
fi
echo "$bin"
