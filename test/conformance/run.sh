#!/usr/bin/env bash
# Runs the MCP conformance server scenarios against a running engine's /mcp endpoint.
#   test/conformance/run.sh [url]     (default http://127.0.0.1:3000/mcp; start it with `npm start`)
# The suite (0.1.16) needs Node >= 22 (it imports fs.globSync): set NODE22 to a Node 22 binary
# when `node` is older. It is not a dependency of the project, so npx fetches it on first use.
set -euo pipefail
url="${1:-http://127.0.0.1:3000/mcp}"
here="$(cd "$(dirname "$0")" && pwd)"
node_bin="${NODE22:-node}"
suite="$(npm exec --yes --package=@modelcontextprotocol/conformance@0.1.16 -- sh -c 'command -v conformance')"
exec "$node_bin" "$(readlink -f "$suite")" server --url "$url" --spec-version 2025-11-25 \
  --expected-failures "$here/expected-failures.yml" -o "${CONFORMANCE_OUT:-$here/../.tmp/conformance}"
