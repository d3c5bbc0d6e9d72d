#!/usr/bin/env bash
# The e2e's kind cluster:
#   cluster.sh up     → creates it (or reuses it when it answers) and prints its kubeconfig path
#   cluster.sh down   → deletes it
#   cluster.sh load IMAGE...  → `kind load docker-image` into it
#   cluster.sh load-archive IMAGE ID ARCHIVE  → `kind load image-archive` (the release's OCI archive)
# kind runs with hack/e2e/docker-shim first on its PATH (a no-op where --privileged works).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

KIND=$("$E2E_DIR/build-tools.sh" kind)
KUBECONFIG_PATH=$(cluster_kubeconfig)
kind_() { PATH="$E2E_DIR/docker-shim:$PATH" KEYWARD_REAL_DOCKER="$(docker_cli)" "$KIND" "$@"; }

exists() { kind_ get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; }
answers() {
  [[ -f $KUBECONFIG_PATH ]] && kind_ get kubeconfig --name "$CLUSTER_NAME" >/dev/null 2>&1 &&
    timeout 60 docker exec "$CLUSTER_NAME-control-plane" kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s get --raw /readyz >/dev/null 2>&1
}

# loaded IMAGE ID: the control-plane node has IMAGE with image id ID. Docker's short names are
# docker.io/… in containerd; a name whose first part has a dot, a colon or is localhost is not.
loaded() {
  local ref=$1 first=${1%%/*}
  if [[ $ref != */* || ( $first != *.* && $first != *:* && $first != localhost ) ]]; then ref="docker.io/$ref"; fi
  timeout 60 docker exec "$CLUSTER_NAME-control-plane" crictl --timeout 30s inspecti -o go-template --template '{{.status.id}}' "$ref" 2>/dev/null | grep -qx "$2"
}

case ${1:-} in
  up)
    "$E2E_DIR/ensure-docker.sh"
    mkdir -p "$(dirname "$KUBECONFIG_PATH")"
    if exists && answers; then
      log "reusing kind cluster $CLUSTER_NAME"
    else
      image=$("$E2E_DIR/node-image.sh")
      exists && kind_ delete cluster --name "$CLUSTER_NAME" >/dev/null 2>&1
      timed "kind create cluster $CLUSTER_NAME ($image)" kind_ create cluster --name "$CLUSTER_NAME" --image "$image" \
        --kubeconfig "$KUBECONFIG_PATH" --wait 5m >&2
    fi
    kind_ get kubeconfig --name "$CLUSTER_NAME" >"$KUBECONFIG_PATH"
    echo "$KUBECONFIG_PATH"
    ;;
  down)
    if exists; then kind_ delete cluster --name "$CLUSTER_NAME" >&2; fi
    rm -f "$KUBECONFIG_PATH"
    ;;
  load)
    shift
    for image in "$@"; do
      # already there (same name and id) after an earlier run: nothing to do
      id=$(docker image inspect -f '{{.Id}}' "$image")
      if loaded "$image" "$id"; then continue; fi
      timed "kind load $image" kind_ load docker-image "$image" --name "$CLUSTER_NAME" >&2
    done
    ;;
  load-archive)
    # load-archive IMAGE ID ARCHIVE: an image archive (OCI layout or docker save) naming IMAGE,
    # imported by the nodes' containerd as a user's `ctr images import` would.
    [[ $# == 4 ]] || { echo "usage: $0 load-archive IMAGE ID ARCHIVE" >&2; exit 2; }
    if ! loaded "$2" "$3"; then
      timed "kind load image-archive $4" kind_ load image-archive "$4" --name "$CLUSTER_NAME" >&2
      loaded "$2" "$3" || die "$4 did not give the nodes $2 with id $3"
    fi
    ;;
  *) echo "usage: $0 up|down|load IMAGE...|load-archive IMAGE ID ARCHIVE" >&2; exit 2 ;;
esac
