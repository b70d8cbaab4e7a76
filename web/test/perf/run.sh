#!/usr/bin/env bash
# The whole sequence behind docs/benchmarks.md's "A million tasks" and
# "Overview under 100 events/s", from the repository's root:
#
#   web/test/perf/run.sh            # both
#   web/test/perf/run.sh tasks      # the million tasks only
#   web/test/perf/run.sh overview   # the overview under load only
#
# tasks:    builds taskflow and taskflow-bench from this tree (the dashboard
#           is embedded from internal/frontend/webui/dist), starts a redis-server of
#           its own on a free port, fills it with TASKS tasks (default
#           1,000,000; taskflow-bench fill, FILL_ARGS), prints its INFO
#           memory, serves it with `taskflow api --insecure` (no workers,
#           no scheduler: the data stays as written) and runs
#           tasks-page.mjs; then stops both.
# overview: starts `taskflow dev` (open mode) on OVERVIEW_REDIS_URL (default
#           the local redis://127.0.0.1:6379/0) in a fresh namespace, runs
#           overview-load.mjs at RATE=0 (baseline) and at RATE (default 40
#           submits/s ≈ 120 task events/s), then stops it and deletes the
#           namespace's keys (SCAN + UNLINK of {namespace}:*, never a flush).
# Results (JSON) and logs go to OUT_DIR (default a new temporary folder).
# Run it on a quiet machine; `uptime` is printed around each measurement.
set -euo pipefail

what="${1:-all}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="${OUT_DIR:-$(mktemp -d -t taskflow-ui-bench.XXXXXX)}"
mkdir -p "$out"
bin="$out/bin"
tasks="${TASKS:-1000000}"
rate="${RATE:-40}"
pids=()
redis_pid=""
ns_to_delete="" # the overview's namespace, deleted on the way out

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_ready() { # url
  for _ in $(seq 1 600); do
    curl -sf "$1/ready" >/dev/null && return 0
    sleep 0.1
  done
  echo "run.sh: $1 did not become ready" >&2
  return 1
}

stop_pid() { # pid: SIGTERM, then wait for it
  if kill -0 "$1" 2>/dev/null; then
    kill "$1"
    while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
  fi
}

cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p" || true; done
  if [ -n "$redis_pid" ]; then stop_pid "$redis_pid" || true; fi
  if [ -n "$ns_to_delete" ]; then
    "$bin/taskflow-bench" fill --redis-url "${OVERVIEW_REDIS_URL:-redis://127.0.0.1:6379/0}" --namespace "$ns_to_delete" --delete || true
  fi
}
trap cleanup EXIT

echo "== building into $bin"
(cd "$root" && go build -o "$bin/" ./cmd/taskflow ./cmd/taskflow-bench)
if [ ! -d "$root/web/node_modules" ]; then (cd "$root/web" && npm ci --no-audit --no-fund); fi

if [ "$what" = all ] || [ "$what" = tasks ]; then
  rport="$(free_port)"
  redis_url="redis://127.0.0.1:$rport/0"
  mkdir -p "$out/redis"
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$out/redis" --logfile "$out/redis/redis.log" &
  redis_pid=$!
  for _ in $(seq 1 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "== fill: $tasks tasks into $redis_url namespace fill ($(uptime))"
  # shellcheck disable=SC2086
  "$bin/taskflow-bench" fill --redis-url "$redis_url" --namespace fill --tasks "$tasks" \
    --types noop,sleep --completed-share 0.7 --dlq-share 0.01 --progress 10s --json ${FILL_ARGS:-} | tee "$out/fill.json"
  redis-cli -p "$rport" info memory | grep -E '^(used_memory|used_memory_rss|used_memory_dataset):' | tee "$out/redis-memory.txt"
  port="$(free_port)"
  REDIS_URL="$redis_url" TASKFLOW_NAMESPACE=fill TASKFLOW_ADMIN_KEY= \
    "$bin/taskflow" api --addr "127.0.0.1:$port" --insecure >"$out/api.log" 2>&1 &
  api_pid=$!
  pids+=("$api_pid")
  wait_ready "http://127.0.0.1:$port"
  echo "== tasks-page.mjs ($(uptime))"
  (cd "$root/web" && OUT="$out/tasks-page.json" TASKS_URL="http://127.0.0.1:$port" node test/perf/tasks-page.mjs) | sed -n '/^| /,$p'
  echo "== done ($(uptime)); API RSS: $(ps -o rss= -p "$api_pid") KiB"
  stop_pid "$api_pid"
  stop_pid "$redis_pid"
  redis_pid=""
fi

if [ "$what" = all ] || [ "$what" = overview ]; then
  ns="uibench-$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  oredis="${OVERVIEW_REDIS_URL:-redis://127.0.0.1:6379/0}"
  port="$(free_port)"
  REDIS_URL="$oredis" TASKFLOW_NAMESPACE="$ns" TASKFLOW_ADMIN_KEY= \
    "$bin/taskflow" dev --addr "127.0.0.1:$port" >"$out/dev.log" 2>&1 &
  dev_pid=$!
  pids+=("$dev_pid")
  ns_to_delete="$ns"
  wait_ready "http://127.0.0.1:$port"
  for r in 0 "$rate"; do
    echo "== overview-load.mjs RATE=$r on namespace $ns ($(uptime))"
    (cd "$root/web" && OUT="$out/overview-rate$r.json" RATE="$r" OVERVIEW_URL="http://127.0.0.1:$port" node test/perf/overview-load.mjs) | sed -n '/^| /,$p'
    echo "== done ($(uptime))"
  done
  stop_pid "$dev_pid"
  "$bin/taskflow-bench" fill --redis-url "$oredis" --namespace "$ns" --delete
  ns_to_delete=""
fi
echo "== results in $out"
