# tollgate: the gateway as a container. Multi-stage: the build stage compiles better-sqlite3 and the TypeScript,
# the runtime stage holds only production dependencies and dist/, and runs as the unprivileged `node` user.
# docker build -t tollgate . && docker run -p 8080:8080 -v tollgate-data:/data tollgate

FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` (the build) needs the sources, copied below; native addons are rebuilt after.
RUN npm ci --ignore-scripts --no-audit --no-fund && npm rebuild better-sqlite3 esbuild
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY web ./web
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    TOLLGATE_DATA_DIR=/data
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json ./
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains requests in flight (docs/operations.md); give `docker stop -t` more than your longest stream.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
