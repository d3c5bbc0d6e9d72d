#!/usr/bin/env bash
# The base images the Dockerfiles build FROM, made locally (no container registry is reached) and
# printed as NODE_IMAGE=, RUNTIME_IMAGE= lines: a debootstrap'd Debian bookworm (minbase plus
# ca-certificates, as the public node:24-bookworm images carry) with the Node 24 of the `node`
# devDependency (RUNTIME_IMAGE, like node:24-bookworm-slim) and npm (NODE_IMAGE, like
# node:24-bookworm). With KEYWARD_E2E_PUBLIC_BASE=1 the public node:24 images are named instead.
# Used by hack/e2e/images.sh and hack/release.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [[ -n ${KEYWARD_E2E_PUBLIC_BASE:-} ]]; then
  echo "NODE_IMAGE=node:24-bookworm"
  echo "RUNTIME_IMAGE=node:24-bookworm-slim"
  echo "CA_FILE="
  exit 0
fi

node24="$REPO_ROOT/node_modules/node/bin/node"
[[ -x $node24 ]] || die "$node24 missing: run npm ci first"
build() { DOCKER_BUILDKIT=0 docker build -q "$@" >/dev/null; }

npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
# Behind a TLS-inspecting proxy npm needs its CA: the build image (never the runtime one)
# carries the host's bundle at the same path, and the build gets NODE_EXTRA_CA_CERTS.
ca_file=
if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -f $NODE_EXTRA_CA_CERTS ]]; then ca_file=$NODE_EXTRA_CA_CERTS; fi
base_rootfs=$(rootfs_image base "$BASE_PKGS")
base_tag=$( { echo "$base_rootfs"; "$node24" --version; cat "$npm_dir/package.json"; echo "$ca_file"; [[ -z $ca_file ]] || cat "$ca_file"; } | sha256sum | cut -c1-12)
NODE_IMAGE="keyward-e2e/node:24-bookworm-$base_tag" RUNTIME_IMAGE="keyward-e2e/node:24-bookworm-slim-$base_tag"
if ! docker image inspect "$NODE_IMAGE" "$RUNTIME_IMAGE" >/dev/null 2>&1; then
  bstage=$(mktemp -d)
  trap 'rm -rf "$bstage"' EXIT
  install -m 0755 "$node24" "$bstage/node"
  printf 'FROM %s\nCOPY node /usr/local/bin/node\nCMD ["node"]\n' "$base_rootfs" >"$bstage/Dockerfile.slim"
  build -f "$bstage/Dockerfile.slim" -t "$RUNTIME_IMAGE" "$bstage"
  cp -a "$npm_dir" "$bstage/npm"
  {
    printf 'FROM %s\nCOPY npm /usr/local/lib/node_modules/npm\n' "$RUNTIME_IMAGE"
    printf 'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm\n'
    if [[ -n $ca_file ]]; then cp "$ca_file" "$bstage/ca.crt"; printf 'COPY ca.crt %s\n' "$ca_file"; fi
  } >"$bstage/Dockerfile.build"
  build -f "$bstage/Dockerfile.build" -t "$NODE_IMAGE" "$bstage"
fi
echo "NODE_IMAGE=$NODE_IMAGE"
echo "RUNTIME_IMAGE=$RUNTIME_IMAGE"
echo "CA_FILE=$ca_file"
