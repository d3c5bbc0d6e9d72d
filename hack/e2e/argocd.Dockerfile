# Argo CD for the e2e cluster: the argocd binary hack/e2e/build-tools.sh builds (one binary; the
# component comes from argv[0]), the repo-server's git-verify-wrapper.sh, helm (the repo-server
# renders Helm charts with it), git, and Debian's redis-server. Built by hack/e2e/images.sh from
# a staged context on the local base image; apt reaches Debian's mirror (--network host).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git redis-server ca-certificates >/dev/null \
    && rm -rf /var/lib/apt/lists/*
COPY argocd git-verify-wrapper.sh helm /usr/local/bin/
RUN ln -s argocd /usr/local/bin/argocd-application-controller \
    && ln -s argocd /usr/local/bin/argocd-repo-server \
    && useradd -u 999 -m -d /home/argocd argocd
USER 999
WORKDIR /home/argocd
