# One image for the API and the worker; docker-compose.yml picks the command.
# Build stage: every dependency, the TypeScript build, the workflow bundle and the console (npm run build).
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Runtime stage: production dependencies and the build only; no TypeScript at run time.
FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The console's page (/console): the API serves console/dist of the app's root.
COPY --from=build /app/console/dist ./console/dist
COPY cli/agent-engine.js ./cli/agent-engine.js
COPY agents ./agents
# Workers load the prebuilt bundle instead of running webpack at start. The API listens on all
# interfaces here, so it refuses to start without API_KEY (given at run time, never baked into the
# image): docker run -e API_KEY=... (docker-compose.yml requires it too).
ENV WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js HOST=0.0.0.0
# Fewer glibc malloc arenas: the worker's native threads (Temporal's core, the workflow thread) would
# otherwise each keep an arena of freed memory; measured by npm run bench:load, about 40 MB of RSS.
ENV MALLOC_ARENA_MAX=2
USER node
CMD ["node", "dist/api/server.js"]
