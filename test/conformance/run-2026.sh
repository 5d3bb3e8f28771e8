#!/usr/bin/env bash
# Runs the MCP conformance server scenarios that protocol revision 2026-07-28 requires against a
# running engine's /mcp endpoint, with expected-failures-2026.yml as the baseline.
#   test/conformance/run-2026.sh [url]     (default http://127.0.0.1:3000/mcp; start it with `npm start`)
# The suite (0.2.0-alpha.12) needs Node >= 22: set NODE22 to such a binary when `node` is older.
# It is not a dependency of the project, so npx fetches it on first use.
set -euo pipefail
url="${1:-http://127.0.0.1:3000/mcp}"
here="$(cd "$(dirname "$0")" && pwd)"
node_bin="${NODE22:-node}"
suite="$(npm exec --yes --package=@modelcontextprotocol/conformance@0.2.0-alpha.12 -- sh -c 'command -v conformance')"
exec "$node_bin" "$(readlink -f "$suite")" server --url "$url" --requirements 2026-07-28 \
  --expected-failures "$here/expected-failures-2026.yml" -o "${CONFORMANCE_OUT:-$here/../.tmp/conformance-2026}"
