#!/usr/bin/env bash
# Prints the kind node image for the e2e cluster, building it when needed:
#   1. $KEYWARD_E2E_NODE_IMAGE when set;
#   2. kind's public node image of $K8S_VERSION when a registry serves it (`docker pull` works):
#      kind's default image when it is that release, else kindest/node:$K8S_VERSION;
#   3. else an offline node image built here, tagged keyward-e2e/node:<k8s>-<hash of its inputs>
#      (reused while that tag exists in dockerd):
#      a Debian bookworm root filesystem (debootstrap: systemd, containerd, runc, CNI plugins),
#      kind's base-image files with hack/e2e/node/fixups.sh sourced by the entrypoint, kubeadm,
#      kubelet, kubectl, crictl, and every image `kubeadm config images list` names (built from
#      the control plane's and hack/e2e/go's binaries), imported into the node's containerd.
# kind skips kubeadm's preflight and the kubelet pulls IfNotPresent, so nothing is pulled.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [[ -n ${KEYWARD_E2E_NODE_IMAGE:-} ]]; then echo "$KEYWARD_E2E_NODE_IMAGE"; exit 0; fi

KIND_SRC=$(module_source "$E2E_DIR/go/kind" sigs.k8s.io/kind)
PUBLIC_IMAGE=$(sed -n 's/^const Image = "\(.*\)"$/\1/p' "$KIND_SRC/pkg/apis/config/defaults/image.go")
[[ -n $PUBLIC_IMAGE ]] || die "no default node image in $KIND_SRC/pkg/apis/config/defaults/image.go"
# The e2e runs its own release (the oldest supported), rarely the one kind defaults to.
[[ $PUBLIC_IMAGE == "kindest/node:$K8S_VERSION@"* ]] || PUBLIC_IMAGE="kindest/node:$K8S_VERSION"

if docker image inspect "$PUBLIC_IMAGE" >/dev/null 2>&1 ||
  { [[ -z ${KEYWARD_E2E_OFFLINE:-} ]] && timeout 300 "$(docker_cli)" pull -q "$PUBLIC_IMAGE" >/dev/null 2>&1; }; then
  echo "$PUBLIC_IMAGE"
  exit 0
fi
log "kind's node image $PUBLIC_IMAGE cannot be pulled: using an offline node image"

NODE_BIN=$("$E2E_DIR/build-tools.sh" node-binaries)
CP_BIN=$(controlplane_bin)
[[ -x $CP_BIN/kube-apiserver && -x $CP_BIN/etcd ]] || die "no control-plane binaries (KEYWARD_K8S_MINOR=${K8S_VERSION%.*} npm run control-plane -- build)"

inputs_hash=$( {
  echo "$K8S_VERSION $KIND_VERSION $SUITE $NODE_PKGS $COMP_PKGS"
  basename "$NODE_BIN"
  cat "$CP_BIN/../build.json" 2>/dev/null | grep '"inputs"' || true
  hash_of "$0" "$E2E_DIR"/node/*
} | sha256sum | cut -c1-12)
NODE_IMAGE="keyward-e2e/node:$K8S_VERSION-$inputs_hash"
if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then echo "$NODE_IMAGE"; exit 0; fi

build() { # legacy builder: FROM local images only
  DOCKER_BUILDKIT=0 docker build -q "$@" >/dev/null
}

exec 9>"$E2E_CACHE/node-image.lock"
flock 9 # one build at a time; a run that waited finds the image built
if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then echo "$NODE_IMAGE"; exit 0; fi
t0=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"; docker rm -f -v keyward-e2e-node-build >/dev/null 2>&1 || true' EXIT

node_rootfs=$(rootfs_image node "$NODE_PKGS")
comp_rootfs=$(rootfs_image comp "$COMP_PKGS")  # prepare.sh makes both at once, ahead of time

# 1. the node base image
mkdir -p "$work/base"
cp -a "$KIND_SRC/images/base/files" "$work/base/files"
chmod -R u+w "$work/base/files"
cp "$E2E_DIR/node/fixups.sh" "$E2E_DIR/node/Dockerfile.base" "$work/base/"
timed "node base image" build -f "$work/base/Dockerfile.base" --build-arg "ROOTFS_IMAGE=$node_rootfs" -t keyward-e2e/node-base:build "$work/base"

# 2. component images, tagged as kubeadm expects them
images=()
for img in $("$NODE_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null); do
  name=${img##*/}
  name=${name%%:*}
  d="$work/images/$name"
  mkdir -p "$d"
  case $name in
    kube-apiserver | kube-controller-manager | etcd)
      cp "$CP_BIN/$name" "$d/"
      printf 'FROM %s\nCOPY %s /usr/local/bin/%s\n' "$comp_rootfs" "$name" "$name" >"$d/Dockerfile" ;;
    kube-scheduler)
      cp "$NODE_BIN/$name" "$d/"
      printf 'FROM %s\nCOPY %s /usr/local/bin/%s\n' "$comp_rootfs" "$name" "$name" >"$d/Dockerfile" ;;
    kube-proxy)
      cp "$NODE_BIN/kube-proxy" "$d/kube-proxy.real"
      cp "$E2E_DIR/node/kube-proxy" "$d/kube-proxy"
      printf 'FROM %s\nCOPY kube-proxy.real kube-proxy /usr/local/bin/\n' "$comp_rootfs" >"$d/Dockerfile" ;;
    coredns)
      cp "$NODE_BIN/coredns" "$d/"
      printf 'FROM %s\nCOPY coredns /coredns\nEXPOSE 53 53/udp\nENTRYPOINT ["/coredns"]\n' "$comp_rootfs" >"$d/Dockerfile" ;;
    pause)
      cp "$NODE_BIN/pause" "$d/"
      printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$d/Dockerfile" ;;
    *) die "no recipe for image $img" ;;
  esac
  build -t "$img" "$d"
  images+=("$img")
done
# kind's containerd config names its own sandbox image: tag pause for it too
sandbox=$(sed -n 's/^ *sandbox_image = "\(.*\)"/\1/p' "$KIND_SRC/images/base/files/etc/containerd/config.toml")
pause=$(printf '%s\n' "${images[@]}" | grep '/pause:')
if [[ -n $sandbox && $sandbox != "$pause" ]]; then docker tag "$pause" "$sandbox"; images+=("$sandbox"); fi
docker save -o "$work/images.tar" "${images[@]}"

# 3. the node image: what `kind build node-image` does, minus pulls
id=keyward-e2e-node-build
docker rm -f -v "$id" >/dev/null 2>&1 || true
docker run -d --name "$id" --entrypoint=sleep --security-opt seccomp=unconfined keyward-e2e/node-base:build infinity >/dev/null
for f in kubeadm kubelet; do docker cp "$NODE_BIN/$f" "$id:/usr/bin/$f"; done
docker cp "$CP_BIN/kubectl" "$id:/usr/bin/kubectl"
docker cp "$NODE_BIN/crictl" "$id:/usr/local/bin/crictl"
docker exec "$id" mkdir -p /kind/manifests /etc/cni/net.d
docker cp "$E2E_DIR/node/default-cni.yaml" "$id:/kind/manifests/default-cni.yaml"
docker cp "$E2E_DIR/node/10-bridge.conflist" "$id:/etc/cni/net.d/10-bridge.conflist"
docker exec "$id" sh -c "chown root:root /usr/bin/kubeadm /usr/bin/kubelet /usr/bin/kubectl /usr/local/bin/crictl && printf %s $K8S_VERSION >/kind/version"
# Kubernetes >= 1.35 refuses cgroup v1 unless told otherwise (a no-op on cgroup v2 hosts)
docker exec "$id" sh -c 'sed -i "s|^KUBELET_EXTRA_ARGS=.*|& --fail-cgroupv1=false|" /etc/default/kubelet && grep -q fail-cgroupv1 /etc/default/kubelet'
docker exec "$id" sh -c 'nohup containerd >/tmp/containerd.log 2>&1 & echo $! >/tmp/containerd.pid'
timeout 60 bash -c "until '$(docker_cli)' exec $id ctr version >/dev/null 2>&1; do sleep 0.5; done"
docker exec -i "$id" ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
  --all-platforms --no-unpack --digests - <"$work/images.tar" >/dev/null
imported=$(docker exec "$id" ctr --namespace=k8s.io images list -q)
for img in "${images[@]}"; do grep -qx "$img" <<<"$imported" || die "$img missing in the node's containerd"; done
# sleep as PID 1 does not reap: wait until containerd is a zombie or gone
docker exec "$id" sh -c 'p=$(cat /tmp/containerd.pid); kill $p; while grep -Eq "^State:\s+[SRD]" /proc/$p/status 2>/dev/null; do sleep 0.2; done; rm -f /tmp/containerd.*'
docker commit --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
  --change 'ENV HTTP_PROXY="" HTTPS_PROXY="" NO_PROXY=""' "$id" "$NODE_IMAGE" >/dev/null
echo "$(date -u -Is) node image $NODE_IMAGE $((SECONDS - t0))s" >>"$E2E_CACHE/timings.log"
log "built $NODE_IMAGE in $((SECONDS - t0))s"
echo "$NODE_IMAGE"
