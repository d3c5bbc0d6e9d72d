# keyward's image: built with dev dependencies, run with production dependencies only, as a
# non-root user, on a read-only root filesystem.
#
#   buildah bud -t keyward:0.1.0 .        (or: docker build -t keyward:0.1.0 .)
#
# The `node` devDependency only carries Node 24 for npm scripts on developer machines; in the
# image the base image's Node 24 runs everything, and `npm ci --omit=dev` leaves it out.

ARG NODE_IMAGE=node:24-bookworm
ARG RUNTIME_IMAGE=node:24-bookworm-slim

# --- build: TypeScript → dist/ -------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
# Behind a TLS-inspecting proxy, pass its CA bundle to npm:
#   --build-arg NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt -v /etc/ssl/certs:/etc/ssl/certs:ro
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
FROM ${NODE_IMAGE} AS prod-deps
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime ---------------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="keyward" \
      org.opencontainers.image.description="Kubernetes operator for projects, memberships, access tokens, certificate profiles and secret syncs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="keyward"

ENV NODE_ENV=production
# A small young generation keeps the resident set near the live heap (idle 88 MB, 113 MB with
# 1000 Projects: npm run bench -- engine); the chart adds a heap cap fitted to its memory limit.
ENV NODE_OPTIONS="--max-semi-space-size=1"
# At most two glibc malloc arenas: Node's worker threads (GC, libuv) otherwise each get one, and
# their retained pages show up as resident memory. Measured with 1000 Projects and the chart's
# flags (3 runs each, bench/RESULTS.md): peak 121 → 113 MB creating, 130 → 122 MB after a restart.
ENV MALLOC_ARENA_MAX=2
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
