# syntax=docker/dockerfile:1
#
# The controller function's image: Node.js 24 (the major in package.json
# "engines"), production dependencies only, running as a non-root numeric
# user. It serves CloudEvents on $PORT (Knative sets it; default 8080).
#
#   docker build -t <registry>/<repository>:<tag> .
#
# For reproducible builds, pin the base image by digest:
#   --build-arg NODE_IMAGE=node:24-slim@sha256:<digest>
ARG NODE_IMAGE=node:24-slim

# --- build: bundle the function into one self-contained ES module. Loading
# @kubernetes/client-node from thousands of files costs ~0.9 s per cold start;
# the bundle starts in ~0.4 s (bench/REPORT.md, P1). Type checking is CI's job.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY events ./events
COPY functions ./functions
RUN npm run build:bundle

# --- runtime: the bundle and the LB template; no node_modules, no package managers.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# 1 MB young-generation semi-spaces: idle 85 -> 79 MB, 100-concurrent peak
# 173 -> 142 MB (bench P5), with no measurable latency cost.
ENV NODE_OPTIONS=--max-semi-space-size=1
# V8 code cache, written below at image build and read on every cold start.
ENV NODE_COMPILE_CACHE=/app/.node-compile-cache
WORKDIR /app
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* \
           /usr/local/bin/yarn /usr/local/bin/yarnpkg \
 && mkdir -p /app/.node-compile-cache && chown 1000:1000 /app/.node-compile-cache
COPY --from=build /src/dist/function.mjs ./dist/function.mjs
# The default LB template (TEMPLATE_PATH=infra/templates/lb-deployment.yaml,
# relative to /app). The Knative Service mounts the installed one instead.
COPY infra/templates ./infra/templates
# The "node" user of the base image, by number so that the kubelet can
# verify runAsNonRoot; the root filesystem may be mounted read-only (Node
# then reads the primed cache and skips writing to it).
USER 1000:1000
# Prime the compile cache as the runtime user (Node keys the cache by uid):
# start once, wait for readiness, stop with SIGTERM; the cache is written at exit.
RUN PORT=8080 node dist/function.mjs & pid=$!; \
    for i in $(seq 100); do node -e "fetch('http://127.0.0.1:8080/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" && break; sleep 0.1; done; \
    kill -TERM "$pid"; wait "$pid"
EXPOSE 8080
CMD ["node", "dist/function.mjs"]
