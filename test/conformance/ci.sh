#!/usr/bin/env bash
# The MCP conformance server scenarios against a fresh `npm start` (its /mcp), with a baseline of
# expected failures: a scenario that fails and is not listed there fails this script. The argument
# names the runner: run.sh (the default: protocol 2025-11-25, expected-failures.yml) or run-2026.sh
# (protocol 2026-07-28, expected-failures-2026.yml). .ci/run runs both; so can anyone:
#   NODE22=/path/to/node22+ test/conformance/ci.sh [run-2026.sh]
set -euo pipefail
runner="${1:-run.sh}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
# Under the clone rather than /tmp: as root, the embedded PostgreSQL runs as the postgres user,
# who must reach its data dir. Named like a jest run's directory (run-<pid>), which a jest run
# starting meanwhile leaves alone while this process lives.
work="$root/test/.tmp/run-$$"
mkdir -p "$work"
port="$(node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")"
log="$work/npm-start.log"

# In a session of its own, like a terminal's foreground job, so that SIGINT (Ctrl-C) reaches all of it.
PORT="$port" DATA_DIR="$work/data" setsid npm start >"$log" 2>&1 &
engine=$!
stop() {
  kill -INT -- "-$engine" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$engine" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$engine" 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT

ready() { node -e "fetch('http://127.0.0.1:$port/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; }
for _ in $(seq 1 600); do
  ready && break
  kill -0 "$engine" 2>/dev/null || break
  sleep 1
done
if ! ready; then
  echo "npm start did not become ready; its output:" >&2
  tail -n 50 "$log" >&2
  exit 1
fi
echo "npm start is ready on port $port"
CONFORMANCE_OUT="$work/results" bash "test/conformance/$runner" "http://127.0.0.1:$port/mcp"
