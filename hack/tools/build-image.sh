#!/usr/bin/env bash
# Builds keyward's image with buildah where no Docker engine runs (as root, vfs storage), from
# base images made locally: a debootstrap'd Debian bookworm (minbase) plus the Node 24 binary of
# the repo's `node` devDependency (and the machine's npm for the build stages). Only Debian's
# and npm's package registries are reached.
#   hack/tools/build-image.sh              → localhost/keyward:<version>
# Where the real node:24 images can be pulled, plain `docker build .` / `buildah bud .` is enough.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
version="$(node -p "require('$root/package.json').version")"
cache="${KEYWARD_CACHE_DIR:-$HOME/.cache/keyward}/image"
rootfs="$cache/rootfs-bookworm"
bah=(buildah --storage-driver vfs)

need() { command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }; }
need buildah buildah
need debootstrap debootstrap

node24="$root/node_modules/node/bin/node"
[[ -x "$node24" ]] || { echo "build-image: $node24 missing: run npm ci first" >&2; exit 1; }
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"

if [[ ! -x "$rootfs/usr/local/bin/node" ]]; then
  echo "build-image: debootstrap bookworm into $rootfs" >&2
  rm -rf "$rootfs.tmp" && mkdir -p "$cache"
  debootstrap --variant=minbase bookworm "$rootfs.tmp" http://deb.debian.org/debian >&2
  rm -rf "$rootfs.tmp"/var/cache/apt/archives/*.deb "$rootfs.tmp"/var/lib/apt/lists/*
  install -m 0755 "$node24" "$rootfs.tmp/usr/local/bin/node"
  mkdir -p "$rootfs.tmp/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$rootfs.tmp/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs.tmp/usr/local/bin/npm"
  mv "$rootfs.tmp" "$rootfs"
fi

# localhost/node:24-bookworm (with npm) and localhost/node:24-bookworm-slim (without).
for tag in 24-bookworm 24-bookworm-slim; do
  "${bah[@]}" inspect --type image "localhost/node:$tag" >/dev/null 2>&1 && continue
  ctr="$("${bah[@]}" from scratch)"
  mnt="$("${bah[@]}" mount "$ctr")"
  tar -C "$rootfs" -cf - . | tar -C "$mnt" -xf -
  [[ "$tag" == *slim ]] && rm -rf "$mnt/usr/local/lib/node_modules/npm" "$mnt/usr/local/bin/npm"
  "${bah[@]}" umount "$ctr" >/dev/null
  "${bah[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd node "$ctr"
  "${bah[@]}" commit --rm "$ctr" "localhost/node:$tag" >&2
done

# Behind a TLS-inspecting proxy the build stages need its CA bundle for npm.
ca=()
if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -f "$NODE_EXTRA_CA_CERTS" ]]; then
  ca=(-v "$(dirname "$NODE_EXTRA_CA_CERTS"):$(dirname "$NODE_EXTRA_CA_CERTS"):ro" --build-arg "NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS")
fi
"${bah[@]}" bud --isolation chroot --network host --layers=false "${ca[@]}" \
  --build-arg NODE_IMAGE=localhost/node:24-bookworm --build-arg RUNTIME_IMAGE=localhost/node:24-bookworm-slim \
  --build-arg VERSION="$version" --build-arg REVISION="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)" \
  --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -t "localhost/keyward:$version" "$root" >&2
echo "localhost/keyward:$version"
