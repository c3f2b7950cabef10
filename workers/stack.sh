#!/usr/bin/env bash
# The whole stack on one machine: Temporal dev server (with its Web UI), a model server (llama.cpp
# serving SmolLM2-135M, unless MODEL_BASE_URL or MODEL_PROVIDER names another), one worker and the API.
# Installs what is missing, creates and migrates the database, and stops everything it started on
# Ctrl-C. Safe to run again: installs are skipped, the database and Temporal's SQLite file are kept.
set -euo pipefail
cd "$(dirname "$0")/.."

bash workers/services.sh
bash workers/setup.sh --build
mkdir -p .data

export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
export PORT="${PORT:-8080}"
# A development stack: the API and the worker start with development secrets (with a warning) and
# serve metrics without METRICS_TOKEN. Outside it they refuse weak secrets (docs/operations.md, Configuration).
export DEVELOPMENT_MODE="${DEVELOPMENT_MODE:-1}"
UI_PORT="${TEMPORAL_UI_PORT:-8233}"
# The dashboard's run page links owners to a run's workflow in this UI.
export TEMPORAL_UI_URL="${TEMPORAL_UI_URL:-http://127.0.0.1:$UI_PORT}"
# The UI decodes runs' sealed payloads through the API's codec endpoint, which in development mode
# answers this machine's callers without the operator token (docs/operations.md, "Keys and the codec endpoint").
export CODEC_ALLOWED_ORIGINS="${CODEC_ALLOWED_ORIGINS:-http://127.0.0.1:$UI_PORT,http://localhost:$UI_PORT}"

pids=()
stop() {
  trap - EXIT INT TERM
  [ ${#pids[@]} -eq 0 ] || kill -TERM "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop EXIT INT TERM

reachable() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

if reachable "$TEMPORAL_ADDRESS"; then
  echo "stack: using the Temporal server already at $TEMPORAL_ADDRESS" >&2
else
  echo "stack: starting the Temporal dev server (state in .data/temporal.db)" >&2
  mapfile -t dev_flags < <(grep -v -e '^#' -e '^$' workers/temporal-dev-server.args)
  .tools/bin/temporal server start-dev \
    --ip 127.0.0.1 --port "${TEMPORAL_ADDRESS##*:}" --ui-port "$UI_PORT" --ui-codec-endpoint "http://127.0.0.1:$PORT/codec" \
    --db-filename .data/temporal.db --log-level warn "${dev_flags[@]}" \
    >.data/temporal.log 2>&1 &
  pids+=($!)
  for _ in $(seq 1 150); do reachable "$TEMPORAL_ADDRESS" && break; sleep 0.2; done
  reachable "$TEMPORAL_ADDRESS" || { echo "stack: Temporal did not start; see .data/temporal.log" >&2; exit 1; }
fi

# The model: MODEL_BASE_URL names any OpenAI-compatible provider, MODEL_PROVIDER=local the quoting
# provider (no model at all), MODEL_PROVIDER=openai alone OpenAI; with neither, the stack's own.
model_line=""
if [ -z "${MODEL_BASE_URL:-}" ] && [ -z "${MODEL_PROVIDER:-}" ]; then
  MODEL_PORT="${MODEL_SERVER_PORT:-8081}"
  echo "stack: starting the model server on 127.0.0.1:$MODEL_PORT (${MODEL_FILE:-SmolLM2-135M-Instruct}; log in .data/model.log)" >&2
  # A key of this start's own: only the service's processes may spend the model's compute.
  MODEL_API_KEY="$(node -p "require('crypto').randomBytes(16).toString('hex')")"
  export MODEL_API_KEY
  MODEL_SERVER_PORT="$MODEL_PORT" MODEL_SERVER_API_KEY="$MODEL_API_KEY" .tools/bin/python workers/modelServer.py >.data/model.log 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$MODEL_PORT/health" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$MODEL_PORT/health" >/dev/null || { echo "stack: the model server did not start; see .data/model.log" >&2; exit 1; }
  export MODEL_BASE_URL="http://127.0.0.1:$MODEL_PORT/v1"
  # SmolLM2-135M loops inside an unbounded JSON object: json_object is asked with a bounded grammar
  # (workers/jsonObject.gbnf). Another GGUF gets llama.cpp's own, unless MODEL_JSON_OBJECT_GRAMMAR says.
  [ -n "${MODEL_FILE:-}" ] || export MODEL_JSON_OBJECT_GRAMMAR="${MODEL_JSON_OBJECT_GRAMMAR-$PWD/workers/jsonObject.gbnf}"
  model_line="  Model        http://127.0.0.1:$MODEL_PORT   (llama.cpp, ${MODEL_FILE:-SmolLM2-135M-Instruct})"
fi
export MODEL_PROVIDER="${MODEL_PROVIDER:-openai}"

node dist/db/migrate.js >/dev/null
# The worker and the API run exactly as `npm run start:worker` / `start:api` define them, without npm
# in between, so that Ctrl-C's SIGTERM reaches them and they drain.
script() { node -p "require('./package.json').scripts['$1']"; }
read -ra worker_cmd <<<"$(script start:worker)"
read -ra api_cmd <<<"$(script start:api)"
"${worker_cmd[@]}" &
pids+=($!)
"${api_cmd[@]}" &
pids+=($!)

for _ in $(seq 1 100); do reachable "127.0.0.1:$PORT" && break; sleep 0.1; done
cat >&2 <<MSG

  API          http://127.0.0.1:$PORT   (health: /healthz, readiness: /readyz)
  Temporal UI  http://127.0.0.1:$UI_PORT
$model_line
  Admin CLI    npm run admin -- workspace create --name demo --credits 100000

  Ctrl-C stops everything this command started.
MSG
wait -n "${pids[@]}"
