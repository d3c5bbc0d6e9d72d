#!/usr/bin/env bash
# `npm run lint:workflows`: actionlint on .github/workflows (syntax, expressions, action inputs,
# permissions, and — with shellcheck on PATH — the run: scripts). actionlint comes from
# KEYWARD_ACTIONLINT, else hack/tools/ensure-actionlint.sh (built from its Go module, cached).
# In CI (CI=true) shellcheck must be there (.ci/run installs Debian's package): without it
# actionlint would skip the scripts silently.
set -euo pipefail
cd "$(dirname "$0")/../.."
actionlint="${KEYWARD_ACTIONLINT:-$(bash hack/tools/ensure-actionlint.sh)}"
if ! command -v shellcheck >/dev/null; then
  if [[ ${CI:-} == true ]]; then
    echo "lint:workflows: shellcheck is not installed (apt-get install shellcheck)" >&2
    exit 1
  fi
  echo "lint:workflows: shellcheck is not installed: the run: scripts are not checked" >&2
fi
# No pyflakes: the workflows have no Python scripts.
workflows=(.github/workflows/*.yml)
"$actionlint" -no-color -pyflakes= "${workflows[@]}"
echo "lint:workflows: ${#workflows[@]} workflows ok"
