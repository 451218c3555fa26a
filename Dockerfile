# One image for the api, the worker and the migration job (the command differs).
FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/setup-tools.sh scripts/setup-tools.sh
# The image runs no browser tests: no Chromium in it.
ENV SKIP_CHROMIUM_INSTALL=1
RUN npm ci --no-audit --no-fund
COPY . .
# The console's static build, served by the API at /console.
RUN npx tsx scripts/build-console.ts
ENV NODE_ENV=production
EXPOSE 3000
CMD ["npm", "run", "start:api"]
