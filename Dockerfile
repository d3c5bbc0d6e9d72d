# keyward's image: distroless's shape, from Debian's packages. The final stage is FROM scratch and
# holds only glibc (libc6), libgcc-s1, libstdc++6, the CA bundle, /etc/passwd and /etc/group
# (nonroot = 65532), /tmp, the Node 24 binary, and keyward's dist/ and production node_modules.
# No shell, no package manager, no npm. /var/lib/dpkg/status.d/<package> records each Debian
# package whose files it carries (as distroless does), so image scanners and the SBOM see them.
#
#   docker build -t keyward:dev .                       (BuildKit: Docker 23+, or DOCKER_BUILDKIT=1)
#   docker buildx build --platform linux/amd64,linux/arm64 .
#
# The JavaScript stages run on the build machine's platform ($BUILDPLATFORM: keyward and its
# dependencies are plain JavaScript); the root filesystem stage runs on the target platform
# ($TARGETARCH), so its Debian packages and Node binary are the target's.
# The `node` devDependency only carries Node 24 for npm scripts on developer machines; in the
# image the base image's Node 24 runs everything, and `npm ci --omit=dev` leaves it out.

ARG NODE_IMAGE=node:24-bookworm

# --- build: TypeScript → dist/ -------------------------------------------------------------
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS build
# Behind a TLS-inspecting proxy, pass its CA bundle to npm:
#   --build-arg NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
# (a build argument of the build stages only: it never reaches the runtime image).
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: nothing the build needs runs an install script (the `node` package's
# would download a second Node for npm scripts; the base image's Node 24 is used instead).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- prod-deps: runtime dependencies only --------------------------------------------------
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS prod-deps
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- rootfs: the Debian packages' files, the CA bundle, users, Node -------------------------
# The files each package's dpkg file list names (libraries and their configuration; not its
# programs, manuals or translations), its status stanza in status.d/<package> and its md5sums
# restricted to the files copied. base-files gives /etc/os-release (scanners read the
# distribution from it), ca-certificates the bundle update-ca-certificates generates here,
# gcc-12-base the copyright libgcc-s1 and libstdc++6 depend on.
FROM ${NODE_IMAGE} AS rootfs
ARG TARGETARCH
RUN set -eu; \
    arch="$(dpkg --print-architecture)"; \
    if [ -n "${TARGETARCH:-}" ] && [ "$TARGETARCH" != "$arch" ]; then \
      echo "the rootfs stage runs on $arch, not the target $TARGETARCH" >&2; exit 1; \
    fi; \
    if ! dpkg-query -W -f '${Status}' ca-certificates 2>/dev/null | grep -q 'ok installed'; then \
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null; \
    fi; \
    # A bundle of Debian's Mozilla roots only (--fresh: also when the build image's bundle was replaced).
    update-ca-certificates --fresh >/dev/null; \
    r=/rootfs; \
    mkdir -p "$r/usr" "$r/var/lib/dpkg/status.d" "$r/etc/ssl/certs" "$r/usr/local/bin" "$r/home/nonroot"; \
    # merged /usr, as in the build image: /lib -> usr/lib (and /lib64 on amd64)
    for d in lib lib32 lib64 libx32; do \
      if [ -L "/$d" ]; then cp -P "/$d" "$r/$d"; mkdir -p "$r/$(readlink "/$d")"; fi; \
    done; \
    copy() { tar -C / -c --no-recursion -T - | tar -C "$r" -x --keep-directory-symlink; }; \
    for pkg in libc6 libgcc-s1 libstdc++6 gcc-12-base; do \
      dpkg-query -L "$pkg" | while read -r f; do \
        if [ -d "$f" ] && [ ! -L "$f" ]; then continue; fi; \
        case "$f" in \
          /lib/*|/lib64/*|/usr/lib/*|/usr/lib64/*|/etc/*|/usr/share/doc/*/copyright) \
            case "$f" in /usr/lib/*/gconv/*|/usr/lib/*/audit/*) continue ;; esac; \
            echo "${f#/}" ;; \
        esac; \
      done | copy; \
    done; \
    printf '%s\n' etc/os-release usr/lib/os-release etc/debian_version usr/share/doc/base-files/copyright \
      usr/share/doc/ca-certificates/copyright | while read -r f; do [ -e "/$f" ] || [ -L "/$f" ] && echo "$f"; done | copy; \
    cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/ca-certificates.crt"; \
    for pkg in base-files ca-certificates libc6 libgcc-s1 libstdc++6 gcc-12-base; do \
      dpkg-query -s "$pkg" >"$r/var/lib/dpkg/status.d/$pkg"; \
      sums="/var/lib/dpkg/info/$pkg:$arch.md5sums"; [ -f "$sums" ] || sums="/var/lib/dpkg/info/$pkg.md5sums"; \
      if [ -f "$sums" ]; then \
        while read -r sum f; do if [ -e "$r/$f" ]; then echo "$sum  $f"; fi; done <"$sums" >"$r/var/lib/dpkg/status.d/$pkg.md5sums"; \
        [ -s "$r/var/lib/dpkg/status.d/$pkg.md5sums" ] || rm "$r/var/lib/dpkg/status.d/$pkg.md5sums"; \
      fi; \
    done; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"; \
    printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$r/etc/group"; \
    printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$r/etc/nsswitch.conf"; \
    chown 65532:65532 "$r/home/nonroot" && chmod 0700 "$r/home/nonroot"; \
    mkdir -m 1777 "$r/tmp"; \
    cp "$(command -v node)" "$r/usr/local/bin/node"

# --- runtime ---------------------------------------------------------------------------------
FROM scratch
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="keyward" \
      org.opencontainers.image.description="Kubernetes operator for projects, memberships, access tokens, certificate profiles and secret syncs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/keyward/keyward" \
      org.opencontainers.image.vendor="keyward"

COPY --from=rootfs /rootfs/ /
# Node trusts its own copy of Mozilla's roots; /etc/ssl/certs/ca-certificates.crt is there for
# NODE_OPTIONS=--use-openssl-ca (or --use-system-ca) and for NODE_EXTRA_CA_CERTS bundles built on it.
ENV PATH=/usr/local/bin \
    NODE_ENV=production
# A small young generation keeps the resident set near the live heap (idle 89 MB, 110–113 MB with
# 1000 Projects: npm run bench -- engine); the chart adds a heap cap fitted to its memory limit.
ENV NODE_OPTIONS="--max-semi-space-size=1"
# At most two glibc malloc arenas: Node's worker threads (GC, libuv) otherwise each get one, and
# their retained pages show up as resident memory. Measured with 1000 Projects and the chart's
# flags (3 runs each, bench/RESULTS.md): peak 121 → 113 MB creating, 130 → 122 MB after a restart.
ENV MALLOC_ARENA_MAX=2
# A fixed mmap threshold: glibc otherwise raises it to the size of every large block freed (a
# response body, a list page), and later blocks of that size stay in the arenas once freed. With
# it, 1000 Projects peak at 113 MB creating (114–121 without) and 119–122 MB restarted and in
# steady state (118–130 without): bench/RESULTS.md.
ENV MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
# Owned by root and not writable by the runtime user: nothing at run time writes here, so the
# image also runs with readOnlyRootFilesystem (the chart mounts an emptyDir on /tmp).
COPY --from=prod-deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./

# 65532: the conventional "nonroot" uid/gid of distroless images, as the chart's
# podSecurityContext expects; numeric so runAsNonRoot can be verified without /etc/passwd.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "dist/main.js"]
