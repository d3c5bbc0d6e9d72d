#!/usr/bin/env bash
# Everything the e2e tests need, built or reused from ~/.cache/keyward; prints KEY=VALUE lines
# for test/e2e/global-setup.ts:
#   KUBECONFIG        $KEYWARD_E2E_KUBECONFIG when set, else the kind cluster of cluster.sh up
#   KUBECTL, HELM     the control plane's kubectl, hack/tools/ensure-helm.sh's helm
#   KEYWARD_VERSION, KEYWARD_IMAGE, KEYWARD_CHART, KEYWARD_SBOM   the release artifacts of
#                     hack/release.sh (in $E2E_CACHE/release): the image <image.repository>:<version>
#                     (loaded from its OCI archive), the packaged chart, the SBOM
#   KEYWARD_IMAGE_NEXT  the same image under a second tag, for `helm upgrade` to a new tag
#   EMULATOR_IMAGE, ARGOCD_IMAGE   built by images.sh
#   ARGOCD_MANIFESTS  Argo CD's CRDs and stock argocd-cm/-secret/-rbac-cm from its module
#   PREVIOUS_VERSION, PREVIOUS_COMMIT, KEYWARD_IMAGE_PREVIOUS, PREVIOUS_CHART   the previous
#                     release (CHANGELOG.md) rebuilt from its commit by previous-release.sh, or
#                     PREVIOUS_ERROR saying why it could not be (upgrade.test.ts fails with it)
# With KEYWARD_E2E_KUBECONFIG the images are loaded with `kind load` into the kind cluster
# KEYWARD_E2E_CLUSTER names when set; otherwise that cluster must be able to get them itself.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$E2E_DIR/ensure-docker.sh"
kubectl_dir=$(controlplane_bin)
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

# What an earlier run left (it is torn down in the order the tests need: no keyward may run
# while its namespaces go, or it would reconcile their objects one last time): helm releases
# first, then keyward's finalizers (on its objects and on the token Secrets it holds), then the
# namespaces.
# Every request is bounded (kubectl has no timeout of its own): an apiserver that accepts and never
# answers fails this script with kubectl's message instead of holding the e2e until CI's limit.
kubectl() { "$kubectl_dir/kubectl" --kubeconfig "$kubeconfig" --request-timeout=60s "$@"; }
# Only what the e2e creates: namespaces kw-e2e-*, its releases kw-e2e, kw-ns, kw-shard, kw-scale, kw-argo, kw-upgrade, kw-check, kw-conv.
leftovers=$(kubectl get namespaces -o name | sed -n 's|^namespace/\(kw-e2e-.*\)$|\1|p')
if [[ -n $leftovers ]]; then
  log "removing what an earlier run left: $(echo $leftovers)"
  for ns in $leftovers; do
    for r in $(timeout 120 "$helm" list -n "$ns" -q --kubeconfig "$kubeconfig"); do "$helm" uninstall "$r" -n "$ns" --wait --timeout 5m --kubeconfig "$kubeconfig" >&2; done
  done
  # keyward's CRDs whose conversion webhook is gone or about to go with these namespaces: served
  # in their stored version alone with conversion None, as helm uninstall's hook leaves them, or
  # listing, patching and deleting their objects (and the namespaces holding them) would fail.
  for crd in $(kubectl get crd -o name | sed -n 's|^customresourcedefinition.apiextensions.k8s.io/\(.*\.keyward\.dev\)$|\1|p'); do
    svc=$(kubectl get crd "$crd" -o jsonpath='{.spec.conversion.webhook.clientConfig.service.namespace}/{.spec.conversion.webhook.clientConfig.service.name}')
    [[ $svc == / ]] && continue
    if [[ " $(echo $leftovers) " != *" ${svc%%/*} "* ]] && kubectl -n "${svc%%/*}" get service "${svc#*/}" >/dev/null 2>&1; then continue; fi
    log "CRD $crd converts through $svc, which is gone: serving its stored version alone"
    kubectl get crd "$crd" -o json |
      node -e 'const c = JSON.parse(require("fs").readFileSync(0, "utf8")); c.spec.versions = c.spec.versions.map((v) => (v.storage ? v : { ...v, served: false })); c.spec.conversion = { strategy: "None" }; process.stdout.write(JSON.stringify(c));' |
      kubectl replace -f - >&2
  done
  # One kind at a time: a kind whose CRD is gone (Argo CD's, after an interrupted run) must not
  # hide the others' finalizers.
  # keyward's kinds by their stored version: an unqualified read goes through the conversion
  # webhook, which the releases just uninstalled took with them.
  kinds="secrets providerconfigs.v1alpha1.keyward.dev projects.v1alpha1.keyward.dev projectmemberships.v1alpha1.keyward.dev secretsyncs.v1alpha1.keyward.dev accesstokens.v1alpha1.keyward.dev certificateprofiles.v1alpha1.keyward.dev applications.argoproj.io"
  for ns in $leftovers; do
    for kind in $kinds; do
      # A kind whose CRD is not installed (Argo CD's before its file ran) lists nothing.
      # -o name prints the kind's unqualified type: each object is patched through $kind instead.
      { kubectl get "$kind" -n "$ns" -o name 2>/dev/null || true; } | sed "s|^[^/]*/|$kind/|" |
        xargs -r -P 4 -I{} "$kubectl_dir/kubectl" --kubeconfig "$kubeconfig" --request-timeout=60s patch -n "$ns" {} --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null
    done
  done
  # Its own deadline: a request timeout would also cut the watch that --wait follows.
  "$kubectl_dir/kubectl" --kubeconfig "$kubeconfig" delete namespace $leftovers --wait=true --timeout=300s >&2
fi
# Cluster-scoped objects of keyward installs that no helm release owns any more (Argo CD's).
kubectl delete clusterrole,clusterrolebinding -l 'app.kubernetes.io/name in (keyward,keyward-webhook),app.kubernetes.io/instance in (kw-e2e,kw-ns,kw-shard,kw-scale,kw-argo,kw-upgrade,kw-check,kw-conv)' --ignore-not-found >&2
kubectl delete clusterrolebinding kw-e2e-argocd --ignore-not-found >&2

# keyward's release artifacts, as `npm run release` makes them (the image is built once, here):
# the nodes get the image from its OCI archive, under the chart's default reference.
eval "$(KEYWARD_RELEASE_DIR=${KEYWARD_RELEASE_DIR:-$E2E_CACHE/release} "$REPO_ROOT/hack/release.sh")"
KEYWARD_IMAGE=$RELEASE_IMAGE
images=$("$E2E_DIR/images.sh")
eval "$images"
# The same image under a second tag: a user's `helm upgrade --set image.tag=...`.
next="${KEYWARD_IMAGE}-next"
docker tag "$KEYWARD_IMAGE" "$next"
if [[ -n $load ]]; then
  "$E2E_DIR/cluster.sh" load-archive "$KEYWARD_IMAGE" "$RELEASE_IMAGE_ID" "$RELEASE_IMAGE_ARCHIVE"
  "$E2E_DIR/cluster.sh" load "$next" "$EMULATOR_IMAGE" "$ARGOCD_IMAGE" ${KEYWARD_IMAGE_PREVIOUS:+"$KEYWARD_IMAGE_PREVIOUS"}
fi

echo "KUBECONFIG=$kubeconfig"
echo "KUBECTL=$kubectl_dir/kubectl"
echo "HELM=$helm"
echo "KEYWARD_IMAGE=$KEYWARD_IMAGE"
echo "KEYWARD_IMAGE_NEXT=$next"
echo "KEYWARD_VERSION=$RELEASE_VERSION"
echo "KEYWARD_CHART=$RELEASE_CHART"
echo "KEYWARD_SBOM=$RELEASE_SBOM"
echo "EMULATOR_IMAGE=$EMULATOR_IMAGE"
echo "ARGOCD_IMAGE=$ARGOCD_IMAGE"
echo "ARGOCD_MANIFESTS=$ARGOCD_MANIFESTS"
if [[ -n ${PREVIOUS_ERROR:-} ]]; then
  echo "PREVIOUS_ERROR=$PREVIOUS_ERROR"
else
  echo "PREVIOUS_VERSION=$PREVIOUS_VERSION"
  echo "PREVIOUS_COMMIT=$PREVIOUS_COMMIT"
  echo "KEYWARD_IMAGE_PREVIOUS=$KEYWARD_IMAGE_PREVIOUS"
  echo "PREVIOUS_CHART=$PREVIOUS_CHART"
fi
