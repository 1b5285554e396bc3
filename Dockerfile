# syntax=docker/dockerfile:1
#
# The controller function's image, distroless-style: the Node.js 24 binary
# (the major in package.json "engines"), the shared libraries it links, CA
# certificates, the startup snapshot and the LB template; no shell, no package
# manager, no node_modules code; running as a non-root numeric user. It serves
# CloudEvents on $PORT (Knative sets it; default 8080).
#
#   docker build -t <registry>/<repository>:<tag> .
#
# For reproducible builds, pin the base image by digest:
#   --build-arg NODE_IMAGE=node:24-slim@sha256:<digest>
# The runtime's Node binary and libraries are copied from the build stage: the
# startup snapshot only starts with the exact Node binary that built it.
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
# The runtime's root filesystem, assembled in /rootfs:
# - the Node binary without its symbol table and debug information (strip
#   --strip-all keeps the dynamic symbols that native addons and stack traces
#   use): 126 MB of which 18 MB are symbols and DWARF, 4.3 MB of the
#   compressed image. binutils, for strip, only in this stage;
# - each shared library ldd resolves for the binary (libc, libm,
#   libstdc++, libgcc_s, the dynamic loader…) at its own path; Node links
#   OpenSSL and ICU statically, and glibc (2.34 and later) has its files and
#   DNS name services built in, so nothing else is loaded;
# - dpkg's record of the Debian packages those libraries come from (their
#   status stanzas, one file per package in /var/lib/dpkg/status.d/, as
#   distroless images have them) and their copyright files, so that an SBOM
#   tool lists those packages at their versions, and no other; and
#   /etc/os-release (of base-files, recorded the same way), which names the
#   Debian release, so that the SBOM's package URLs (pkg:deb/debian/…) say
#   which distribution's advisories apply;
# - CA certificates: the Mozilla root store compiled into this Node
#   (tls.rootCertificates) as a PEM bundle where OpenSSL-based tools look for
#   it; Node itself uses its compiled-in copy;
# - /etc/passwd and /etc/group naming uid and gid 1000 (`node`), the user the
#   image runs as, and /etc/nsswitch.conf (files before DNS, as distroless);
# - /tmp, empty, world-writable with the sticky bit (the root filesystem may
#   be mounted read-only; Knative mounts nothing there).
RUN set -eu; \
    mkdir -p /rootfs/usr/local/bin /rootfs/etc/ssl/certs /rootfs/var/lib/dpkg/status.d /rootfs/tmp; \
    chmod 1777 /rootfs/tmp; \
    apt-get update -qq; \
    DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends binutils > /dev/null; \
    cp -a "$(command -v node)" /rootfs/usr/local/bin/node; \
    strip --strip-all /rootfs/usr/local/bin/node; \
    for lib in $(ldd /usr/local/bin/node | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do \
      mkdir -p "/rootfs$(dirname "$lib")"; \
      cp -L "$lib" "/rootfs$lib"; \
      real=$(readlink -f "$lib"); \
      for path in "$lib" "/usr$lib" "$real" "${real#/usr}"; do \
        if dpkg -S "$path" > /tmp/owner 2>/dev/null; then sed 's/: .*//; s/, /\n/g' /tmp/owner >> /tmp/owners; break; fi; \
      done; \
    done; \
    cp -L /etc/os-release /rootfs/etc/os-release; \
    dpkg -S /etc/os-release | sed 's/: .*//' >> /tmp/owners; \
    for pkg in $(sort -u /tmp/owners); do \
      name=${pkg%%:*}; \
      dpkg-query -s "$pkg" > "/rootfs/var/lib/dpkg/status.d/$name"; \
      if [ -f "/usr/share/doc/$name/copyright" ]; then mkdir -p "/rootfs/usr/share/doc/$name"; cp "/usr/share/doc/$name/copyright" "/rootfs/usr/share/doc/$name/"; fi; \
    done; \
    rm -f /tmp/owner /tmp/owners; \
    node -e "require('fs').writeFileSync('/rootfs/etc/ssl/certs/ca-certificates.crt', require('tls').rootCertificates.join('\n') + '\n')"; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnode:x:1000:1000:node:/home/node:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > /rootfs/etc/passwd; \
    printf 'root:x:0:\nnode:x:1000:\nnogroup:x:65534:\n' > /rootfs/etc/group; \
    printf 'passwd: files\ngroup: files\nhosts: files dns\n' > /rootfs/etc/nsswitch.conf; \
    ls -lR /rootfs

# Smoke test, here because the runtime image has no shell: the snapshot starts
# with the Node binary the runtime stage copies (/rootfs's, stripped) and
# becomes ready, as uid 1000 with the runtime's environment. A start needs a
# kubeconfig (none at all is refused); this one is never used, as nothing is
# reconciled, and is gone with the step. test/e2e/image.test.ts starts the
# runtime image itself.
RUN printf 'apiVersion: v1\nkind: Config\ncurrent-context: smoke\nclusters: [{name: smoke, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: smoke, user: {}}]\ncontexts: [{name: smoke, context: {cluster: smoke, user: smoke}}]\n' > /tmp/smoke-kubeconfig; \
    chmod 644 /tmp/smoke-kubeconfig; \
    setpriv --reuid=1000 --regid=1000 --clear-groups env NODE_ENV=production NODE_OPTIONS=--max-semi-space-size=1 KUBECONFIG=/tmp/smoke-kubeconfig PORT=8080 /rootfs/usr/local/bin/node --snapshot-blob dist/function.blob & pid=$!; \
    ok=1; for i in $(seq 100); do node -e "fetch('http://127.0.0.1:8080/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" && ok=0 && break; sleep 0.1; done; \
    kill -TERM "$pid"; wait "$pid"; rm -f /tmp/smoke-kubeconfig; exit $ok

# --- runtime: nothing but /rootfs, the snapshot and the LB template.
FROM scratch AS runtime
# The release: package.json's version (a unit test keeps this default equal to
# it; `npm run release` checks the built image's label against it).
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="meridio-2-gateway-controller" \
      org.opencontainers.image.description="Serverless Meridio-2 Gateway controller on Knative" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/bin
ENV NODE_ENV=production
# 1 MB young-generation semi-spaces: a smaller idle and peak RSS (bench P1,
# P5) with no measurable latency cost. The snapshot is built with the same
# option (tools/bundle/shipped.mts).
ENV NODE_OPTIONS=--max-semi-space-size=1
WORKDIR /app
COPY --from=build /src/dist/function.blob ./dist/function.blob
# The package.json and licence files of the npm packages bundled into the
# snapshot, and npm's record of them (node_modules/.package-lock.json): the
# licence texts of the shipped code, and what an SBOM tool reads (nothing
# loads them; tools/bundle/bundled-packages.mts).
COPY --from=build /src/dist/image/node_modules ./node_modules
# The default LB template (TEMPLATE_PATH=infra/templates/lb-deployment.yaml,
# relative to /app). The Knative Service mounts the installed one instead.
COPY infra/templates ./infra/templates
# uid and gid 1000 (`node` in /etc/passwd), by number so that the kubelet can
# verify runAsNonRoot; the root filesystem may be mounted read-only.
USER 1000:1000
EXPOSE 8080
# Exactly what the bench's "shipped" variant runs (tools/bundle/shipped.mts).
CMD ["node", "--snapshot-blob", "dist/function.blob"]
