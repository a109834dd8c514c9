# The worldline image: one image for both processes.
#   controller:  worldline-controller [flags]   (the default command; runs as uid 65532, read-only root works)
#   node-agent:  worldline-node-agent [flags]   (run as root, privileged; see docs/images.md)
#   CLI:         worldline receipts verify ...
# With a registry:  docker build -t worldline:dev .
# Without one (this repository's machines): scripts/images/build-local.sh builds local equivalents of the
# two bases from Debian packages and the npm registry, then this same file with BUILD_BASE/RUNTIME_BASE.
ARG BUILD_BASE=node:20-bookworm
ARG RUNTIME_BASE=node:20-bookworm-slim
# Debian packages the image adds to its runtime base. python3 is the examiner of private-evaluator-v1 checks
# (/usr/bin/python3 running a script staged from PRIME; docs/private-evaluator-broker.md); worlds and checks
# see it too, as they see the whole image. Empty leaves it out (private checks then cannot start).
ARG IMAGE_PACKAGES=python3

# ---- build: npm ci (compiles the worldline addon and better-sqlite3), tsc, then drop dev dependencies,
# type declarations, source maps and better-sqlite3's sources and objects ----
FROM ${BUILD_BASE} AS build
# Node's headers are those of the base's own Node (/usr/local/include/node): node-gyp must not download any
# (the repository's .npmrc names /usr, the Debian layout; the environment overrides it). better-sqlite3
# compiles from source instead of fetching a prebuilt binary.
ENV npm_config_nodedir=/usr/local \
    WORLDLINE_NODEDIR=/usr/local \
    npm_config_build_from_source=true \
    npm_config_update_notifier=false
WORKDIR /src
# Dependencies first: this layer is reused until package.json, the lock file or the addon's sources change.
COPY package.json package-lock.json .npmrc ./
COPY native/ native/
RUN npm ci --no-audit --no-fund \
 && test -f native/build/Release/worldline_native.node \
 && test -f node_modules/better-sqlite3/build/Release/better_sqlite3.node
COPY . .
RUN npx tsc -p scripts/images/tsconfig.image.json \
 && npm prune --omit=dev --no-audit --no-fund \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete \
 && cd node_modules/better-sqlite3 \
 && mv build/Release/better_sqlite3.node /tmp/ && rm -rf build deps src \
 && mkdir -p build/Release && mv /tmp/better_sqlite3.node build/Release/

# ---- runtime: Node, the compiled tree, production node_modules and the addon; nothing to compile with ----
FROM ${RUNTIME_BASE}
ARG IMAGE_PACKAGES
# Before any COPY, so code changes reuse this layer; the package lists are not kept.
RUN if [ -n "${IMAGE_PACKAGES}" ]; then \
      apt-get update \
   && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${IMAGE_PACKAGES} \
   && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin; \
    fi
ARG VERSION=0.0.0-dev
LABEL org.opencontainers.image.title="worldline" \
      org.opencontainers.image.description="worldline controller, node-agent and CLI" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production
# /app, not /opt: the node-agent binds /usr, /etc, /opt, /bin, /sbin and /lib* of its own root into every
# world read-only (node-agent/sandbox/rootfs.ts), and worlds have no use for worldline's own code.
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/native/build/Release/worldline_native.node ./native/build/Release/worldline_native.node
# The per-world supervisor the node-agent execs for every World and Check (native/src/shim/).
COPY --from=build /src/native/build/Release/worldline_shim ./native/build/Release/worldline_shim
COPY scripts/images/bin/ /usr/local/bin/
# The controller's user. The node-agent overrides it with uid 0 (its pod's securityContext, or --user 0).
USER 65532:65532
CMD ["worldline-controller"]
