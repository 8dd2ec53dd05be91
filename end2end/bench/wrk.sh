#!/usr/bin/env bash
# Plan page reads/s and saves/s under wrk with 64 connections, against the
# release binary, for one database URL (docs/BENCHMARKS.md).
#   bash end2end/bench/wrk.sh sqlite:/tmp/bench/plans.db
#   bash end2end/bench/wrk.sh postgres://postgres@127.0.0.1:5432/test
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DB="$1"; SECS="${SECS:-20}"; PORT="${PORT:-3099}"
cd "$ROOT"
LEPTOS_SITE_ROOT=target/site RUST_LOG=warn ./target/release/memplan serve --addr "127.0.0.1:$PORT" --database "$DB" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$PORT/api/v1/plans" >/dev/null 2>&1 && break; sleep 0.1; done
PLAN="$(./target/release/memplan estimate --print-example)"
BODY="$(printf '{"title":"wrk bench","author":"bench","plan":%s}' "$PLAN")"
ID="$(curl -fsS -X POST "http://127.0.0.1:$PORT/api/v1/plans" -H 'content-type: application/json' -d "$BODY" | sed 's/.*"id":"\([^"]*\)".*/\1/')"
LUA="$(mktemp --suffix=.lua)"
python3 - "$BODY" > "$LUA" <<'PY'
import json, sys
print('wrk.method = "POST"')
print('wrk.headers["Content-Type"] = "application/json"')
print('wrk.body = ' + json.dumps(sys.argv[1]))
PY
echo "== plan page GET /p/$ID ($DB)"
wrk -t2 -c64 -d"${SECS}s" --latency "http://127.0.0.1:$PORT/p/$ID" | grep -E "Requests/sec|Latency|99%|Non-2xx|Socket errors|requests in"
echo "== API GET /api/v1/plans/$ID"
wrk -t2 -c64 -d"${SECS}s" --latency "http://127.0.0.1:$PORT/api/v1/plans/$ID" | grep -E "Requests/sec|Latency|99%|Non-2xx|Socket errors|requests in"
echo "== saves POST /api/v1/plans"
wrk -t2 -c64 -d"${SECS}s" --latency -s "$LUA" "http://127.0.0.1:$PORT/api/v1/plans" | grep -E "Requests/sec|Latency|99%|Non-2xx|Socket errors|requests in"
rm -f "$LUA"
