#!/usr/bin/env bash
# The e2e's kind cluster:
#   cluster.sh up     → creates it (or reuses it when it answers) and prints its kubeconfig path
#   cluster.sh down   → deletes it
#   cluster.sh load IMAGE...  → `kind load docker-image` into it
# kind runs with hack/e2e/docker-shim first on its PATH (a no-op where --privileged works).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

KIND=$("$E2E_DIR/build-tools.sh" kind)
KUBECONFIG_PATH=$(cluster_kubeconfig)
kind_() { PATH="$E2E_DIR/docker-shim:$PATH" KEYWARD_REAL_DOCKER="$(docker_cli)" "$KIND" "$@"; }

exists() { kind_ get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; }
answers() {
  [[ -f $KUBECONFIG_PATH ]] && kind_ get kubeconfig --name "$CLUSTER_NAME" >/dev/null 2>&1 &&
    docker exec "$CLUSTER_NAME-control-plane" kubectl --kubeconfig /etc/kubernetes/admin.conf get --raw /readyz >/dev/null 2>&1
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
      if docker exec "$CLUSTER_NAME-control-plane" crictl inspecti -o go-template --template '{{.status.id}}' "docker.io/$image" 2>/dev/null | grep -qx "$id"; then continue; fi
      timed "kind load $image" kind_ load docker-image "$image" --name "$CLUSTER_NAME" >&2
    done
    ;;
  *) echo "usage: $0 up|down|load IMAGE..." >&2; exit 2 ;;
esac
