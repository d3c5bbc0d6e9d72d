#!/usr/bin/env bash
# The previous release's image and chart, for test/e2e/upgrade.test.ts, rebuilt from the commit
# CHANGELOG.md names for it: the newest `## [x.y.z]` below `## [Unreleased]` and its
# `Commit: <sha>` line. Prints
#   PREVIOUS_VERSION=x.y.z  PREVIOUS_COMMIT=<sha>
#   KEYWARD_IMAGE_PREVIOUS  that commit's Dockerfile on the same local base images as images.sh's
#                           (NODE_IMAGE, RUNTIME_IMAGE from the environment)
#   PREVIOUS_CHART          its charts/keyward, `helm package`d as version and appVersion x.y.z
# or, when the release cannot be found (no entry, a commit missing from this clone),
#   PREVIOUS_ERROR=<why>    and exits 0: upgrade.test.ts fails with it, the other files still run.
# Both are cached by commit (the image's tag also hashes the base images): a second run reuses them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${NODE_IMAGE:?}" "${RUNTIME_IMAGE:?}"
helm=${HELM:-$(bash "$REPO_ROOT/hack/tools/ensure-helm.sh")}

fail_soft() {
  log "previous release: $*"
  printf 'PREVIOUS_ERROR=%q\n' "$*" # shell-quoted: up.sh evals these lines
  exit 0
}

# The first release section after [Unreleased], and the Commit: line inside it.
version= commit= in_unreleased=
while IFS= read -r line; do
  if [[ $line =~ ^##\ \[Unreleased\] ]]; then in_unreleased=1; continue; fi
  [[ -n $in_unreleased ]] || continue
  if [[ $line =~ ^##\ \[([0-9]+\.[0-9]+\.[0-9]+[^]]*)\] ]]; then
    [[ -z $version ]] || break
    version=${BASH_REMATCH[1]}
    continue
  fi
  if [[ -n $version && $line =~ Commit:\ *([0-9a-f]{7,40}) ]]; then commit=${BASH_REMATCH[1]}; break; fi
done <"$REPO_ROOT/CHANGELOG.md"
[[ -n ${version:-} ]] || fail_soft "CHANGELOG.md names no release below ## [Unreleased]"
[[ -n ${commit:-} ]] || fail_soft "CHANGELOG.md's [$version] has no 'Commit: <sha>' line"
if ! full=$(git -C "$REPO_ROOT" rev-parse -q --verify "$commit^{commit}" 2>/dev/null); then
  fail_soft "commit $commit of release $version (CHANGELOG.md) is not in this clone: fetch it (git fetch --unshallow, or git fetch origin $commit)"
fi
commit=$full

dir="$E2E_CACHE/previous-release/$commit"
chart="$dir/keyward-$version.tgz"
src=

# The commit's tree (git archive: no worktree to register or remove), once per run that builds.
extract() {
  [[ -z $src ]] || return 0
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  git -C "$REPO_ROOT" archive "$commit" | tar -x -C "$src"
}

# --- chart ---------------------------------------------------------------------------------
if [[ ! -f $chart ]]; then
  extract
  [[ -f $src/charts/keyward/Chart.yaml ]] || die "commit $commit has no charts/keyward"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  "$helm" package "$src/charts/keyward" --version "$version" --app-version "$version" -d "$dir.tmp" >&2
  mkdir -p "$dir"
  mv "$dir.tmp/keyward-$version.tgz" "$chart"
  rm -rf "$dir.tmp"
fi

# --- image ---------------------------------------------------------------------------------
# That commit's own Dockerfile when it takes the base image as a build argument (it builds
# offline on images.sh's local bases), else today's Dockerfile on that commit's sources.
dockerfile_of_commit=$(git -C "$REPO_ROOT" show "$commit:Dockerfile")
if grep -q '^ARG NODE_IMAGE' <<<"$dockerfile_of_commit"; then
  dockerfile=commit
else
  dockerfile=today
fi
tag_hash=$( { echo "$commit $NODE_IMAGE $RUNTIME_IMAGE $dockerfile"; [[ $dockerfile == commit ]] || cat "$REPO_ROOT/Dockerfile"; } | sha256sum | cut -c1-12)
IMAGE="keyward-e2e/keyward:$version-$tag_hash"
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  extract
  [[ $dockerfile == commit ]] || { log "the Dockerfile of $commit takes no local base images: building its sources with today's"; cp "$REPO_ROOT/Dockerfile" "$src/Dockerfile"; }
  ca=()
  if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -f $NODE_EXTRA_CA_CERTS ]]; then ca=(--build-arg "NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS"); fi
  # BuildKit: the Dockerfiles since the minimal image use $BUILDPLATFORM (RUNTIME_IMAGE is an unused
# argument to them, the base of the runtime stage of the ones before).
timed "docker build keyward $version (previous release, $commit)" env DOCKER_BUILDKIT=1 "$(docker_cli)" build -q --network host "${ca[@]}" \
    --build-arg "NODE_IMAGE=$NODE_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" \
    --build-arg "VERSION=$version" --build-arg "REVISION=$commit" \
    -t "$IMAGE" "$src" >/dev/null
fi

echo "PREVIOUS_VERSION=$version"
echo "PREVIOUS_COMMIT=$commit"
echo "KEYWARD_IMAGE_PREVIOUS=$IMAGE"
echo "PREVIOUS_CHART=$chart"
