#!/usr/bin/env bash
# The MCP conformance client authorization scenarios (suites auth, backcompat, draft, extensions)
# against the engine's OAuth client: the suite starts
# an authorization server and an MCP server per scenario and runs test/conformance/auth-client.ts,
# which connects the way a worker does (tokens in a database of its own on DATABASE_URL's server,
# dropped at the end). expected-failures.yml (client:) is the baseline; a new failure fails this.
#   NODE22=/path/to/node22+ DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres test/conformance/auth-run.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
node_bin="${NODE22:-node}"
server_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="engine_conformance_$$"
admin() { node -e "const pg = require('pg'); const c = new pg.Client(process.argv[1]); c.connect().then(() => c.query(process.argv[2])).then(() => c.end(), (e) => { console.error(e.message); process.exit(1); })" "$server_url" "$1"; }
admin "CREATE DATABASE $db"
trap 'admin "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true' EXIT
db_url="$(node -e "const u = new URL(process.argv[1]); u.pathname = '/' + process.argv[2]; console.log(u.toString())" "$server_url" "$db")"
suite="$(npm exec --yes --package=@modelcontextprotocol/conformance@0.1.16 -- sh -c 'command -v conformance')"
work="$root/test/.tmp/conformance-auth-$$"
for name in auth backcompat draft extensions; do
  DATABASE_URL="$db_url" "$node_bin" "$(readlink -f "$suite")" client --suite "$name" \
    --command "$(command -v node) --import tsx test/conformance/auth-client.ts" \
    --expected-failures test/conformance/expected-failures.yml -o "$work"
done
rm -rf "$work"
