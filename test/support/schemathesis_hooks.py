"""Realistic data for test/schemathesis.test.ts where the OpenAPI document cannot say it.

SCHEMATHESIS_DATA (JSON) names the workspace's agent, a conversation, an uploaded document and a
partner's endpoint: a generated id names nothing, so without them every well-formed request would be
a 404.
"""
import json
import os
from datetime import datetime, timedelta, timezone

import schemathesis

DATA = json.loads(os.environ.get("SCHEMATHESIS_DATA") or "{}")


def _path(context):
    return context.operation.path.rstrip("/") if context.operation is not None else ""


def _storable(value):
    """The value without NUL characters and lone surrogates, which every endpoint refuses in any text
    (docs/api.md) and JSON Schema cannot say. A schedule's `run` is free-form objects nested deep, so
    nearly every generated one held some."""
    if isinstance(value, str):
        return "".join(c for c in value if c != "\x00" and not "\ud800" <= c <= "\udfff")
    if isinstance(value, list):
        return [_storable(v) for v in value]
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    return value


@schemathesis.hook
def map_body(context, body):
    if not isinstance(body, dict):
        return body
    path = _path(context)
    if path.endswith("/recover"):
        # A recovery window spans at most 30 days and ends after it starts, `until` defaulting to now
        # (docs/webhooks.md); JSON Schema cannot relate two dates or say "now", so a generated window
        # is moved into the last hour, as a partner's would be.
        now = datetime.now(timezone.utc)
        window = {"since": (now - timedelta(hours=1)).isoformat()}
        if "until" in body:
            window["until"] = now.isoformat()
        return {**body, **window}
    if path in ("/api/v2/responses", "/api/v2/reports") and "agent" in DATA:
        return {**body, "agent": DATA["agent"]}
    if path.startswith("/api/v2/schedules"):
        # A generated range can run backwards ("5-2"), which Temporal refuses and JSON Schema cannot
        # say; and schedules are created and kept paused, as generated ones firing every few seconds
        # would load the rest of the suite.
        cron = {"cron": "0 8 * * 1-5"} if "cron" in body else {}
        agent = {"agent": DATA["agent"]} if path == "/api/v2/schedules" and "agent" in DATA else {}
        return {**_storable(body), **cron, **agent, "paused": True}
    if path == "/v1/chat/completions" and "agent" in DATA:
        # The agent as the model, the last message a user's with text (the agent answers it), no tools
        # of the caller's own, and a json_schema format with its schema: rules across fields and
        # against the agent's configuration, which JSON Schema cannot say.
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)][:5]
        body = {k: v for k, v in body.items() if k != "tools"}
        return {**_storable(body), "model": DATA["agent"], "messages": messages + [{"role": "user", "content": "hi"}], **_with_schema(body, "response_format")}
    if path == "/v1/responses" and "agent" in DATA:
        body = {k: v for k, v in body.items() if k not in ("previous_response_id", "conversation", "tools")}
        stored = {"store": True} if body.get("background") else {}
        text = {"text": {"format": _with_schema(body.get("text") or {}, "format").get("format")}} if isinstance(body.get("text"), dict) and body["text"].get("format") else {}
        return {**_storable(body), "model": DATA["agent"], "input": "hi", **stored, **text}
    if path == "/api/v2/extractions" and "document" in DATA:
        return {**body, "document": DATA["document"], **({"agent": DATA["agent"]} if "agent" in body and "agent" in DATA else {})}
    return body


def _with_schema(body, key):
    """The format under `key`, with a schema when it asks for json_schema (OpenAI's shapes keep it optional)."""
    format = body.get(key)
    if not isinstance(format, dict) or format.get("type") != "json_schema":
        return {key: format} if key in body else {}
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    if "json_schema" in format or key == "response_format":
        return {key: {**format, "json_schema": {"name": "answer", "schema": schema}}}
    return {key: {**format, "schema": schema}}


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    path = _path(context)
    if path.startswith("/api/v2/conversations/{id}") and "conversation" in DATA:
        return {**path_parameters, "id": DATA["conversation"]}
    # Only the recovery: the endpoint's own DELETE may run first on any other path.
    if path.endswith("/endpoints/{id}/recover") and "endpoint" in DATA:
        return {**path_parameters, "id": DATA["endpoint"]}
    return path_parameters
