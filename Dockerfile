# One image for the API and the worker; docker-compose.yml picks the command.
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY . .
# Bundle the workflows once at build time, so workers start without webpack.
RUN npx tsx -e "require('@temporalio/worker').bundleWorkflowCode({ workflowsPath: require.resolve('./workflows') }).then(b => require('fs').writeFileSync('workflow-bundle.js', b.code))"
ENV WORKFLOW_BUNDLE_PATH=/app/workflow-bundle.js HOST=0.0.0.0
USER node
CMD ["npx", "tsx", "api/server.ts"]
