# syntax=docker/dockerfile:1
# One image per service, from the repository root as build context:
#   docker build --build-arg SERVICE=signals -t signal-service/signals .
# SERVICE is api-gateway, signals, stats or webhooks (the webhooks image runs the API and, with
# command ["node", "dist/worker.js"], the worker); docker-compose.yml passes it per service.
ARG SERVICE

FROM node:24-bookworm-slim AS build
ARG SERVICE
WORKDIR /repo
RUN corepack enable
# 1. Dependencies, cached apart from the sources. `pnpm fetch` needs only the lockfile (and
#    package.json for corepack's pnpm version): it downloads every package into pnpm's store, and
#    this layer is reused until one of these three files changes.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
RUN pnpm fetch
# Then every workspace package.json, in the repository's layout (pnpm-workspace.yaml; a new
# workspace package needs its line here), and node_modules linked from the store, offline.
COPY packages/contracts/package.json packages/contracts/
COPY packages/dashboard/package.json packages/dashboard/
COPY packages/messaging/package.json packages/messaging/
COPY packages/sdk/package.json packages/sdk/
COPY packages/service-kit/package.json packages/service-kit/
COPY packages/telemetry/package.json packages/telemetry/
COPY packages/test-kit/package.json packages/test-kit/
COPY services/api-gateway/package.json services/api-gateway/
COPY services/signals/package.json services/signals/
COPY services/stats/package.json services/stats/
COPY services/webhooks/package.json services/webhooks/
COPY infra/bench/package.json infra/bench/
RUN pnpm install --frozen-lockfile --offline
# 2. Sources, then the build.
COPY tsconfig.base.json tsconfig.build.json ./
COPY packages ./packages
COPY services ./services
# The webhooks guide is served by the gateway at /docs/receiving-webhooks.
COPY docs ./docs
RUN test -f "services/$SERVICE/package.json" || { echo "SERVICE: api-gateway, signals, stats or webhooks" >&2; exit 1; }
RUN pnpm exec tsc -b "services/$SERVICE"
# The gateway also serves the dashboard, the webhooks guide and, at /docs, Scalar's standalone
# bundle (that one file, not the package and its dependencies).
RUN if [ "$SERVICE" = api-gateway ]; then \
      pnpm exec tsc -b packages/dashboard && \
      cp -r docs services/api-gateway/docs && \
      mkdir -p services/api-gateway/vendor/scalar && \
      cp "$(cd services/api-gateway && node -p "require('path').join(require('path').dirname(require.resolve('@scalar/api-reference')),'browser','standalone.js')")" services/api-gateway/vendor/scalar/; \
    fi
# Only this service and its production dependencies, workspace packages included.
RUN pnpm --filter "@signal/$SERVICE" deploy --legacy --prod /out

# Each service's runtime settings: its port, and for the read services a young generation of
# 2 x 8 MiB instead of V8's default (up to 2 x 64 MiB), for their p99: a response allocates tens
# of KB, and a large young generation holds many medium-lived objects that each scavenge copies
# in one long pause; a small one pauses briefly, for the same GC time per byte (docs/benchmarks.md,
# stats). The gateway's is 2 x 16 MiB: each of its processes grew the default one to the 64 MiB cap
# while thousands of live streams were admitted and kept it, 1.80x a bare node:http server's memory
# per stream; at 16 MiB it is 1.02x, with the same CPU per request (docs/benchmarks.md, live stream).
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0

FROM runtime AS runtime-api-gateway
ENV PORT=4000 NODE_OPTIONS=--max-semi-space-size=16
EXPOSE 4000

FROM runtime AS runtime-signals
ENV PORT=4001 NODE_OPTIONS=--max-semi-space-size=8
EXPOSE 4001

FROM runtime AS runtime-stats
ENV PORT=4002 NODE_OPTIONS=--max-semi-space-size=8
EXPOSE 4002

FROM runtime AS runtime-webhooks
ENV PORT=4003
EXPOSE 4003

FROM runtime-${SERVICE}
WORKDIR /app
COPY --from=build --chown=node:node /out ./
USER node
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.WORKER_PORT||process.env.PORT)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/main.js"]
