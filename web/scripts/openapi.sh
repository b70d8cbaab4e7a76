#!/usr/bin/env bash
# Writes the API's /openapi.json to $1: starts `taskflow dev` (embedded
# Redis, open mode) on a free loopback port, fetches the document, stops it.
set -euo pipefail
out=${1:?usage: openapi.sh OUT.json}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/taskflow" ./cmd/taskflow)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
env -u REDIS_URL -u TASKFLOW_ADMIN_KEY "$bin/taskflow" dev --addr "127.0.0.1:$port" --dev-redis-addr 127.0.0.1:0 >"$bin/log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
	if curl -fsS "http://127.0.0.1:$port/openapi.json" -o "$out" 2>/dev/null; then exit 0; fi
	sleep 0.1
done
cat "$bin/log" >&2
echo "openapi.sh: taskflow dev did not serve /openapi.json" >&2
exit 1
