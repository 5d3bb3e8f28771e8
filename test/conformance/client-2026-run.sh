#!/usr/bin/env bash
# The MCP conformance client scenarios required by the 2026-07-28 revision (--requirements, frozen at
# its release) against the workers' MCP client: the suite starts a server per scenario and runs
# test/conformance/client-2026.ts, which connects the way a worker does (protocol auto, tokens in a
# database of its own on DATABASE_URL's server, dropped at the end) and calls the server's tools
# through the engine's input rounds. client-2026-expected-failures.yml (client:) is the baseline;
# a new failure fails this.
#   NODE22=/path/to/node22+ DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres test/conformance/client-2026-run.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
node_bin="${NODE22:-node}"
server_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="engine_conformance_2026_$$"
admin() { node -e "const pg = require('pg'); const c = new pg.Client(process.argv[1]); c.connect().then(() => c.query(process.argv[2])).then(() => c.end(), (e) => { console.error(e.message); process.exit(1); })" "$server_url" "$1"; }
admin "CREATE DATABASE $db"
trap 'admin "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true' EXIT
db_url="$(node -e "const u = new URL(process.argv[1]); u.pathname = '/' + process.argv[2]; console.log(u.toString())" "$server_url" "$db")"
suite="$(PATH="$(dirname "$node_bin"):$PATH" npm exec --yes --package=@modelcontextprotocol/conformance@0.2.0-alpha.12 -- sh -c 'command -v conformance')"
work="$root/test/.tmp/conformance-client-2026-$$"
DATABASE_URL="$db_url" "$node_bin" "$(readlink -f "$suite")" client --requirements 2026-07-28 \
  --command "$(command -v node) --import tsx test/conformance/client-2026.ts" \
  --expected-failures test/conformance/client-2026-expected-failures.yml -o "$work"
rm -rf "$work"
