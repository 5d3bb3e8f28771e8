#!/usr/bin/env bash
# The MCP conformance client scenarios against the workers' MCP client: the suite starts a server
# (and, for authorization scenarios, an authorization server) per scenario and runs
# test/conformance/client.ts, which connects the way a worker does (protocol auto, tokens in a
# database of its own on DATABASE_URL's server, dropped at the end).
#   client-run.sh 2025   conformance 0.1.16, suites auth, backcompat, draft and extensions
#                        (spec 2025-11-25); baseline: expected-failures.yml (client:)
#   client-run.sh 2026   conformance 0.2.0-alpha.12, the scenarios the 2026-07-28 revision requires
#                        (--requirements); baseline: expected-failures-2026.yml (client:)
# A failure not in the baseline fails this. Both suites need Node >= 22:
#   NODE22=/path/to/node22+ DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres test/conformance/client-run.sh 2026
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
era="${1:?which suite: 2025 or 2026}"
node_bin="${NODE22:-node}"
server_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="engine_conformance_${era}_$$"
admin() { node -e "const pg = require('pg'); const c = new pg.Client(process.argv[1]); c.connect().then(() => c.query(process.argv[2])).then(() => c.end(), (e) => { console.error(e.message); process.exit(1); })" "$server_url" "$1"; }
admin "CREATE DATABASE $db"
trap 'admin "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true' EXIT
db_url="$(node -e "const u = new URL(process.argv[1]); u.pathname = '/' + process.argv[2]; console.log(u.toString())" "$server_url" "$db")"
work="$root/test/.tmp/conformance-client-$era-$$"
harness="$(command -v node) --import tsx test/conformance/client.ts"
suite_of() { # package version -> the suite's entry file
  readlink -f "$(PATH="$(dirname "$node_bin"):$PATH" npm exec --yes --package="@modelcontextprotocol/conformance@$1" -- sh -c 'command -v conformance')"
}
case "$era" in
  2025)
    suite="$(suite_of 0.1.16)"
    for name in auth backcompat draft extensions; do
      DATABASE_URL="$db_url" "$node_bin" "$suite" client --suite "$name" --command "$harness" \
        --expected-failures test/conformance/expected-failures.yml -o "$work"
    done ;;
  2026)
    suite="$(suite_of 0.2.0-alpha.12)"
    DATABASE_URL="$db_url" "$node_bin" "$suite" client --requirements 2026-07-28 --command "$harness" \
      --expected-failures test/conformance/expected-failures-2026.yml -o "$work" ;;
  *) echo "client-run.sh: 2025 or 2026, not $era" >&2; exit 2 ;;
esac
rm -rf "$work"
