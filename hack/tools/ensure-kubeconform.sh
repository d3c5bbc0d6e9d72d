#!/usr/bin/env bash
# Installs kubeconform (validates manifests against JSON schemas, built from its Go module
# github.com/yannh/kubeconform: no release download) into keyward's tool cache and prints its path.
#   hack/tools/ensure-kubeconform.sh            → prints .../tools/kubeconform-v0.8.0/kubeconform
#   KUBECONFORM_VERSION=v0.7.0 hack/tools/ensure-kubeconform.sh
# `npm run lint:chart` finds it through KEYWARD_KUBECONFORM, else this cache path.
set -euo pipefail
version="${KUBECONFORM_VERSION:-v0.8.0}"
exec bash "$(dirname "$0")/go-tool.sh" kubeconform github.com/yannh/kubeconform "$version" \
  github.com/yannh/kubeconform/cmd/kubeconform
