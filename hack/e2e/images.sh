#!/usr/bin/env bash
# Builds the emulator's and Argo CD's images with the local dockerd, each tagged by a hash of its
# inputs, and prints EMULATOR_IMAGE=, ARGOCD_IMAGE= lines, and the previous release's image and
# chart (previous-release.sh: KEYWARD_IMAGE_PREVIOUS=, ...). keyward's own image and chart are
# the release's (hack/release.sh, run by up.sh). The base images (node:24-bookworm, -slim) are
# hack/e2e/base-images.sh's: built locally, unless KEYWARD_E2E_PUBLIC_BASE=1.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

build() { DOCKER_BUILDKIT=0 docker build -q "$@" >/dev/null; }

# --- base images (hack/e2e/base-images.sh: local, or the public node:24 ones) ----------------
eval "$("$E2E_DIR/base-images.sh")"

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

echo "ARGOCD_IMAGE=$ARGOCD_IMAGE"
echo "ARGOCD_MANIFESTS=$argocd_dir/manifests"
echo "EMULATOR_IMAGE=$EMULATOR_IMAGE"
