#!/usr/bin/env bash
# npm run test:e2e: the e2e project of vitest (vitest.e2e.config.ts), closing with the
# "N passed, M failed" line that .ci/run prints for npm test. Extra arguments go to vitest.
set -euo pipefail
cd "$(dirname "$0")/../.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
vitest run --config vitest.e2e.config.ts --reporter=default --reporter=json --outputFile="$report" "$@" || status=$?
if [[ -s $report ]]; then
  # A test that did not pass counts as failed, also one skipped because its file's setup failed.
  node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const failed = r.numTotalTests - r.numPassedTests; console.log(`${r.numPassedTests} passed, ${failed} failed`); process.exit(r.numTotalTests > 0 && failed === 0 && r.success ? 0 : 1);' "$report" || status=1
else
  echo "0 passed, 0 failed (no report: the run did not start)"
  status=1
fi
exit "$status"
