#!/usr/bin/env bash
# Installs actionlint (the GitHub Actions workflow linter, built from its Go module
# github.com/rhysd/actionlint: no release download) into keyward's tool cache and prints its path.
#   hack/tools/ensure-actionlint.sh            → prints .../tools/actionlint-v1.7.12/actionlint
#   ACTIONLINT_VERSION=v1.7.11 hack/tools/ensure-actionlint.sh
# `npm run lint:workflows` finds it through KEYWARD_ACTIONLINT, else this cache path.
set -euo pipefail
version="${ACTIONLINT_VERSION:-v1.7.12}"
exec bash "$(dirname "$0")/go-tool.sh" actionlint github.com/rhysd/actionlint "$version" \
  github.com/rhysd/actionlint/cmd/actionlint "-s -w -X github.com/rhysd/actionlint.version=$version"
