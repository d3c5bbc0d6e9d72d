#!/usr/bin/env bash
# The e2e's slow, mostly network-bound first steps, all at once: Docker (installed and started
# when missing) and the three Debian root filesystems of the offline images (node, components,
# base). .ci/run starts it in the background while the Go builds run; up.sh finds it all done.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$E2E_DIR/ensure-docker.sh"
pids=()
rootfs_image node "$NODE_PKGS" >/dev/null & pids+=($!)
rootfs_image comp "$COMP_PKGS" >/dev/null & pids+=($!)
rootfs_image base "$BASE_PKGS" >/dev/null & pids+=($!)
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit "$status"
