#!/usr/bin/env bash
# Everything the e2e tests need, built or reused from ~/.cache/keyward; prints KEY=VALUE lines
# for test/e2e/global-setup.ts:
#   KUBECONFIG        $KEYWARD_E2E_KUBECONFIG when set, else the kind cluster of cluster.sh up
#   KUBECTL, HELM     the control plane's kubectl, hack/tools/ensure-helm.sh's helm
#   KEYWARD_IMAGE, KEYWARD_IMAGE_NEXT, EMULATOR_IMAGE   built by images.sh (NEXT: the same
#                     image under a second tag, for `helm upgrade` to a new tag)
# With KEYWARD_E2E_KUBECONFIG the images are loaded with `kind load` into the kind cluster
# KEYWARD_E2E_CLUSTER names when set; otherwise that cluster must be able to get them itself.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$E2E_DIR/ensure-docker.sh"
kubectl_dir=$(cd "$REPO_ROOT" && npx --no-install node test/controlplane/cli.ts build | sed -n 's/^binaries (.*) in //p')
[[ -x $kubectl_dir/kubectl ]] || die "no kubectl from the control-plane build"
helm=$(bash "$REPO_ROOT/hack/tools/ensure-helm.sh")

load=1
if [[ -n ${KEYWARD_E2E_KUBECONFIG:-} ]]; then
  kubeconfig=$KEYWARD_E2E_KUBECONFIG
  [[ -n ${KEYWARD_E2E_CLUSTER:-} ]] || load=
  log "using the cluster of KEYWARD_E2E_KUBECONFIG=$kubeconfig"
else
  kubeconfig=$("$E2E_DIR/cluster.sh" up)
fi

images=$("$E2E_DIR/images.sh")
eval "$images"
next="${KEYWARD_IMAGE}-next"
docker tag "$KEYWARD_IMAGE" "$next"
if [[ -n $load ]]; then "$E2E_DIR/cluster.sh" load "$KEYWARD_IMAGE" "$next" "$EMULATOR_IMAGE"; fi

echo "KUBECONFIG=$kubeconfig"
echo "KUBECTL=$kubectl_dir/kubectl"
echo "HELM=$helm"
echo "KEYWARD_IMAGE=$KEYWARD_IMAGE"
echo "KEYWARD_IMAGE_NEXT=$next"
echo "EMULATOR_IMAGE=$EMULATOR_IMAGE"
