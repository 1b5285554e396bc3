# syntax=docker/dockerfile:1
#
# The controller function's image: Node.js 24 (the major in package.json
# "engines"), no node_modules and no package managers, running as a non-root
# numeric user. It serves CloudEvents on $PORT (Knative sets it; default 8080).
#
#   docker build -t <registry>/<repository>:<tag> .
#
# For reproducible builds, pin the base image by digest:
#   --build-arg NODE_IMAGE=node:24-slim@sha256:<digest>
# Both stages must use the same image: the startup snapshot only starts with
# the exact Node binary that built it.
ARG NODE_IMAGE=node:24-slim

# --- build: bundle the function into one CommonJS script and build a V8
# startup snapshot from it (tools/bundle/build.mts). Loading and evaluating the
# bundle took ~0.27 s to ready; starting from the snapshot ~0.13 s
# (bench/REPORT.md, P1). Type checking is CI's job.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY events ./events
COPY functions ./functions
COPY tools/bundle ./tools/bundle
# The default LB template is parsed into the snapshot (used when the file at
# TEMPLATE_PATH holds the same text; any other template is parsed at start).
COPY infra/templates ./infra/templates
# `node`, not `npm run build:bundle`: npm run would put the `node` devDependency
# (the version package-lock.json pins) first on PATH, and the snapshot starts
# only with the Node that built it, which must be this image's.
RUN node tools/bundle/build.mts

# --- runtime: the snapshot and the LB template.
FROM ${NODE_IMAGE} AS runtime
# The release: package.json's version (a unit test keeps this default equal to
# it; `npm run release` checks the built image's label against it).
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="meridio-2-gateway-controller" \
      org.opencontainers.image.description="Serverless Meridio-2 Gateway controller on Knative" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production
# 1 MB young-generation semi-spaces: a smaller idle and peak RSS (bench P1,
# P5) with no measurable latency cost. The snapshot is built with the same
# option (tools/bundle/shipped.mts).
ENV NODE_OPTIONS=--max-semi-space-size=1
WORKDIR /app
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* \
           /usr/local/bin/yarn /usr/local/bin/yarnpkg
COPY --from=build /src/dist/function.blob ./dist/function.blob
# The package.json and licence files of the npm packages bundled into the
# snapshot, and npm's record of them (node_modules/.package-lock.json): the
# licence texts of the shipped code, and what an SBOM tool reads (nothing
# loads them; tools/bundle/bundled-packages.mts).
COPY --from=build /src/dist/image/node_modules ./node_modules
# The default LB template (TEMPLATE_PATH=infra/templates/lb-deployment.yaml,
# relative to /app). The Knative Service mounts the installed one instead.
COPY infra/templates ./infra/templates
# The "node" user of the base image, by number so that the kubelet can
# verify runAsNonRoot; the root filesystem may be mounted read-only.
USER 1000:1000
# Smoke test: the snapshot starts with this Node and becomes ready. A start
# needs a kubeconfig (none at all is refused); this one is never used, as
# nothing is reconciled, and is gone with the step.
RUN printf 'apiVersion: v1\nkind: Config\ncurrent-context: smoke\nclusters: [{name: smoke, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: smoke, user: {}}]\ncontexts: [{name: smoke, context: {cluster: smoke, user: smoke}}]\n' > /tmp/smoke-kubeconfig; \
    KUBECONFIG=/tmp/smoke-kubeconfig PORT=8080 node --snapshot-blob dist/function.blob & pid=$!; \
    ok=1; for i in $(seq 100); do node -e "fetch('http://127.0.0.1:8080/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" && ok=0 && break; sleep 0.1; done; \
    kill -TERM "$pid"; wait "$pid"; rm -f /tmp/smoke-kubeconfig; exit $ok
EXPOSE 8080
# Exactly what the bench's "shipped" variant runs (tools/bundle/shipped.mts).
CMD ["node", "--snapshot-blob", "dist/function.blob"]
