# Sourced by kind's node entrypoint (/usr/local/bin/entrypoint) right before fix_cgroup, in the
# offline node image that hack/e2e/node-image.sh builds; log_info/log_warn are the entrypoint's.
# shellcheck shell=bash
keyward_e2e_capbnd=$(awk '/^CapBnd/{print $2}' /proc/self/status)
if (( (16#$keyward_e2e_capbnd >> 24 & 1) == 0 )); then
  # Without CAP_SYS_RESOURCE nothing may lower oom_score_adj and runc fails every pod sandbox
  # ("can't get final child's PID from pipe: EOF"): clamp as kind does for rootless nodes.
  log_info 'keyward-e2e: no CAP_SYS_RESOURCE, containerd restrict_oom_score_adj = true'
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml
fi
if [[ -n "${KEYWARD_E2E_RW_CGROUP:-}" ]]; then
  # hack/e2e/docker-shim ran this node without --privileged: docker mounted the cgroup
  # filesystems read-only. A plain remount,rw gives EBUSY; a bind remount works.
  log_info 'keyward-e2e: remounting cgroup filesystems read-write'
  mount -o remount,bind,rw /sys/fs/cgroup || log_warn 'failed to remount /sys/fs/cgroup rw'
  findmnt -rn -t cgroup,cgroup2 -o TARGET | while IFS= read -r m; do
    mount -o remount,bind,rw "$m" || log_warn "failed to remount $m rw"
  done
fi
