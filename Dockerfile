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

# --- build: compile TypeScript to dist/ with the full (dev) toolchain.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY events ./events
COPY functions ./functions
RUN npm run build

# --- runtime: production dependencies, the compiled function, the LB template.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only, without install scripts; then drop the package
# managers, which the running function never needs.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf "$(npm config get cache)" \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* \
           /usr/local/bin/yarn /usr/local/bin/yarnpkg
COPY --from=build /src/dist/functions ./dist/functions
COPY --from=build /src/dist/events ./dist/events
# The default LB template (TEMPLATE_PATH=infra/templates/lb-deployment.yaml,
# relative to /app). The Knative Service mounts the installed one instead.
COPY infra/templates ./infra/templates
# The "node" user of the base image, by number so that the kubelet can
# verify runAsNonRoot; the root filesystem may be mounted read-only.
USER 1000:1000
EXPOSE 8080
CMD ["node", "dist/functions/main.js"]
