# A local stand-in for the public Node images (node:<v>-bookworm, node:<v>-bookworm-slim): the imported
# Debian minbase, the Debian packages named by PACKAGES, and Node + npm laid out under /usr/local as those
# images have them. Built by scripts/images/node-bases.sh, whose context holds usr/local/ (node-dist.sh;
# only bin/node for the runtime base) and extra-ca/ (the host's extra CA bundle, for the build base of a
# host that has one; else empty).
ARG DEBIAN_BASE
FROM ${DEBIAN_BASE}
ARG PACKAGES=""
RUN if [ -n "${PACKAGES}" ]; then \
      apt-get update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${PACKAGES} \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY usr/local/ /usr/local/
COPY extra-ca/ /usr/local/share/worldline/extra-ca/
# Empty (ignored by Node) unless node-bases.sh put the host's bundle in extra-ca/.
ARG EXTRA_CA_FILE=""
ENV NODE_EXTRA_CA_CERTS=${EXTRA_CA_FILE}
RUN node --version
CMD ["node"]
