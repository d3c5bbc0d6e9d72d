#!/usr/bin/env bash
# Builds keyward's image (the repo's Dockerfile), the emulator's and Argo CD's with the local dockerd,
# each tagged by a hash of its inputs, and prints KEYWARD_IMAGE=, EMULATOR_IMAGE=, ARGOCD_IMAGE= lines,
# and the previous release's image and chart (previous-release.sh: KEYWARD_IMAGE_PREVIOUS=, ...).
# The Dockerfile's base images (node:24-bookworm, -slim) are built locally as hack/tools/build-image.sh
# does (debootstrap'd Debian bookworm + the Node 24 of the `node` devDependency + npm), unless
# KEYWARD_E2E_PUBLIC_BASE=1 (then the public node:24 images are pulled).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

node24="$REPO_ROOT/node_modules/node/bin/node"
[[ -x $node24 ]] || die "$node24 missing: run npm ci first"

build() { DOCKER_BUILDKIT=0 docker build -q "$@" >/dev/null; }

# --- base images ---------------------------------------------------------------------------
if [[ -n ${KEYWARD_E2E_PUBLIC_BASE:-} ]]; then
  NODE_IMAGE=node:24-bookworm RUNTIME_IMAGE=node:24-bookworm-slim
else
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  # Behind a TLS-inspecting proxy npm needs its CA: the build image (never the runtime one)
  # carries the host's bundle at the same path, and the build gets NODE_EXTRA_CA_CERTS.
  ca_file=
  if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -f $NODE_EXTRA_CA_CERTS ]]; then ca_file=$NODE_EXTRA_CA_CERTS; fi
  base_rootfs=$(rootfs_image base)
  base_tag=$( { echo "$base_rootfs"; "$node24" --version; cat "$npm_dir/package.json"; echo "$ca_file"; [[ -z $ca_file ]] || cat "$ca_file"; } | sha256sum | cut -c1-12)
  NODE_IMAGE="keyward-e2e/node:24-bookworm-$base_tag" RUNTIME_IMAGE="keyward-e2e/node:24-bookworm-slim-$base_tag"
  if ! docker image inspect "$NODE_IMAGE" "$RUNTIME_IMAGE" >/dev/null 2>&1; then
    bstage=$(mktemp -d)
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
    rm -rf "$bstage"
  fi
fi

# --- keyward -------------------------------------------------------------------------------
# The tag hashes what the Dockerfile copies (.dockerignore: package*.json, tsconfig*.json, src/).
keyward_hash=$(cd "$REPO_ROOT" && { echo "$NODE_IMAGE $RUNTIME_IMAGE"; cat Dockerfile package.json package-lock.json tsconfig.json tsconfig.build.json; git ls-files -co --exclude-standard src | sort | xargs cat; } | sha256sum | cut -c1-12)
KEYWARD_IMAGE="keyward-e2e/keyward:$keyward_hash"
if ! docker image inspect "$KEYWARD_IMAGE" >/dev/null 2>&1; then
  ca=()
  if [[ -n ${ca_file:-} ]]; then ca=(--build-arg "NODE_EXTRA_CA_CERTS=$ca_file"); fi
  timed "docker build keyward" build --network host "${ca[@]}" \
    --build-arg "NODE_IMAGE=$NODE_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" \
    --build-arg "VERSION=$("$node24" -p "require('$REPO_ROOT/package.json').version")" \
    --build-arg "REVISION=$(git -C "$REPO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
    -t "$KEYWARD_IMAGE" "$REPO_ROOT"
fi

# --- emulator ------------------------------------------------------------------------------
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/test" "$stage/node_modules"
cp "$REPO_ROOT/package.json" "$stage/"
cp -a "$REPO_ROOT/test/emulator" "$stage/test/emulator"
find "$stage/test/emulator" -name '*.test.ts' -delete
cp -a "$REPO_ROOT/node_modules/zod" "$stage/node_modules/zod"
cp "$E2E_DIR/emulator.Dockerfile" "$stage/Dockerfile"
emulator_hash=$( { echo "$RUNTIME_IMAGE"; cd "$stage" && find . -type f | sort | xargs cat; } | sha256sum | cut -c1-12)
EMULATOR_IMAGE="keyward-e2e/emulator:$emulator_hash"
if ! docker image inspect "$EMULATOR_IMAGE" >/dev/null 2>&1; then
  timed "docker build emulator" build --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" -t "$EMULATOR_IMAGE" "$stage"
fi

# --- argocd (for test/e2e/argocd.test.ts) ----------------------------------------------------
argocd_dir=$("$E2E_DIR/build-tools.sh" argocd)
helm=$(bash "$REPO_ROOT/hack/tools/ensure-helm.sh")
astage=$(mktemp -d)
trap 'rm -rf "$stage" "$astage"' EXIT
cp "$argocd_dir/argocd" "$argocd_dir/git-verify-wrapper.sh" "$helm" "$astage/"
cp "$E2E_DIR/argocd.Dockerfile" "$astage/Dockerfile"
argocd_hash=$( { echo "$RUNTIME_IMAGE"; basename "$argocd_dir"; "$helm" version --short; cat "$astage/Dockerfile"; } | sha256sum | cut -c1-12)
ARGOCD_IMAGE="keyward-e2e/argocd:$argocd_hash"
if ! docker image inspect "$ARGOCD_IMAGE" >/dev/null 2>&1; then
  timed "docker build argocd" build --network host --build-arg "BASE_IMAGE=$RUNTIME_IMAGE" -t "$ARGOCD_IMAGE" "$astage"
fi

# --- the previous release (test/e2e/upgrade.test.ts), on the same base images -------------------
# A failure here fails upgrade.test.ts only (PREVIOUS_ERROR), not the other files.
if ! previous=$(NODE_IMAGE=$NODE_IMAGE RUNTIME_IMAGE=$RUNTIME_IMAGE HELM=$helm "$E2E_DIR/previous-release.sh"); then
  previous="PREVIOUS_ERROR=$(printf %q "hack/e2e/previous-release.sh failed (its log is above)")"
fi
echo "$previous"

echo "KEYWARD_IMAGE=$KEYWARD_IMAGE"
echo "ARGOCD_IMAGE=$ARGOCD_IMAGE"
echo "ARGOCD_MANIFESTS=$argocd_dir/manifests"
echo "EMULATOR_IMAGE=$EMULATOR_IMAGE"
