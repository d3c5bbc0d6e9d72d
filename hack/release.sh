#!/usr/bin/env bash
# npm run release: the release artifacts of the version in package.json, in out/<version>/
# (KEYWARD_RELEASE_DIR to choose another folder):
#   keyward-image-<version>.oci.tar   the image (hack/release/oci.ts: OCI image layout, tar), named
#                                     <image.repository of values.yaml>:<version>; it is also left
#                                     in the local Docker engine under that name
#   keyward-image-<version>.cdx.json  CycloneDX 1.6 SBOM of what the image holds (hack/release/sbom.ts)
#   keyward-<version>.tgz             the Helm chart (helm package)
#   SHA256SUMS                        sha256sum of the three
# Chart.yaml's version and appVersion must be package.json's version: the script stops otherwise
# (`hack/release.sh --check` checks that only).
# The image is built by BuildKit on base images made locally (hack/e2e/base-images.sh: Debian's
# and npm's registries only; KEYWARD_E2E_PUBLIC_BASE=1 uses the public node:24-bookworm), for this
# machine's architecture. The multi-arch release build and the push are the release workflow's
# (.github/workflows/release.yml). Prints KEY=VALUE lines (hack/e2e/up.sh reads them); logs go to stderr.
set -euo pipefail
source "$(dirname "$0")/e2e/lib.sh"
log() { echo "[release $(date -u +%T)] $*" >&2; }
cd "$REPO_ROOT"

node=("$REPO_ROOT/node_modules/node/bin/node")
[[ -x ${node[0]} ]] || die "${node[0]} missing: run npm ci first"

# --- versions ----------------------------------------------------------------------------
version=$("${node[@]}" -p 'require("./package.json").version')
chart_field() { sed -n "s/^$1: *[\"']\{0,1\}\([^\"']*\)[\"']\{0,1\} *\$/\1/p" charts/keyward/Chart.yaml; }
chart_version=$(chart_field version)
app_version=$(chart_field appVersion)
if [[ $chart_version != "$version" || $app_version != "$version" ]]; then
  die "charts/keyward/Chart.yaml has version: ${chart_version:-<none>}, appVersion: ${app_version:-<none>}; package.json has version $version: set both in Chart.yaml to $version"
fi
# image.repository of values.yaml: the chart's default image is the one released here.
repository=$(awk '/^image:/{in_image=1; next} in_image && /^[^ #]/{exit} in_image && /^  repository:/{print $2; exit}' charts/keyward/values.yaml | tr -d "\"'")
[[ -n $repository ]] || die "charts/keyward/values.yaml has no image.repository"
image="$repository:$version"
if [[ ${1:-} == --check ]]; then
  log "package.json, Chart.yaml (version, appVersion): $version; default image $image"
  exit 0
fi
out=${KEYWARD_RELEASE_DIR:-$REPO_ROOT/out/$version}
mkdir -p "$out"
archive="$out/keyward-image-$version.oci.tar"
sbom="$out/keyward-image-$version.cdx.json"
chart="$out/keyward-$version.tgz"

# --- image -------------------------------------------------------------------------------
"$E2E_DIR/ensure-docker.sh"
eval "$("$E2E_DIR/base-images.sh")"
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit's time, not the build's: an unchanged tree builds the same image (and its cache holds).
created=$(git log -1 --format=%cI 2>/dev/null || echo unknown)
ca=()
if [[ -n ${CA_FILE:-} ]]; then ca=(--build-arg "NODE_EXTRA_CA_CERTS=$CA_FILE"); fi
build_log="$out/.docker-build.log"
if ! timed "docker build $image" env DOCKER_BUILDKIT=1 "$(docker_cli)" build --progress plain --network host "${ca[@]}" \
  --build-arg "NODE_IMAGE=$NODE_IMAGE" --build-arg "VERSION=$version" \
  --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
  -t "$image" . >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  die "docker build failed (log: $build_log)"
fi
id=$(docker image inspect -f '{{.Id}}' "$image")

# --- OCI archive and SBOM (once per image ID) ----------------------------------------------
if [[ ! -f $out/.image-id || $(cat "$out/.image-id") != "$id" || ! -f $archive || ! -f $sbom || ! -f $out/.image-digest ]]; then
  rm -f "$out/.image-id"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/saved" "$work/oci" "$work/rootfs"
  timed "docker save $image" bash -c 'docker_cli=$1; shift; "$docker_cli" save "$1" | tar -x -C "$2"' _ "$(docker_cli)" "$image" "$work/saved"
  digest=$("${node[@]}" hack/release/oci.ts "$work/saved" "$work/oci" "$image")
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/oci" -cf "$archive.tmp" oci-layout index.json blobs
  mv "$archive.tmp" "$archive"
  cid=$(docker create "$image")
  docker export "$cid" | tar -x -C "$work/rootfs"
  docker rm "$cid" >/dev/null
  "${node[@]}" hack/release/sbom.ts "$work/rootfs" --name "$repository" --version "$version" --digest "$digest" --timestamp "$created" >"$sbom.tmp"
  mv "$sbom.tmp" "$sbom"
  echo "$digest" >"$out/.image-digest"
  echo "$id" >"$out/.image-id"
fi
digest=$(cat "$out/.image-digest")

# --- chart ---------------------------------------------------------------------------------
helm=$(bash "$REPO_ROOT/hack/tools/ensure-helm.sh")
rm -f "$chart"
"$helm" package charts/keyward -d "$out" >/dev/null
[[ -f $chart ]] || die "helm package wrote no $chart"

# --- checksums -----------------------------------------------------------------------------
(cd "$out" && sha256sum "$(basename "$chart")" "$(basename "$archive")" "$(basename "$sbom")" >SHA256SUMS)

log "release $version in $out:"
(cd "$out" && ls -l --block-size=K "$(basename "$chart")" "$(basename "$archive")" "$(basename "$sbom")" SHA256SUMS | awk '{printf "  %8s  %s\n", $5, $9}' >&2)
echo "RELEASE_VERSION=$version"
echo "RELEASE_DIR=$out"
echo "RELEASE_IMAGE=$image"
echo "RELEASE_IMAGE_ID=$id"
echo "RELEASE_IMAGE_DIGEST=$digest"
echo "RELEASE_IMAGE_ARCHIVE=$archive"
echo "RELEASE_SBOM=$sbom"
echo "RELEASE_CHART=$chart"
