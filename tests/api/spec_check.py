#!/usr/bin/env python3
"""spec_check.py — keeps api/openapi.yaml true, from the outside.

It reads the spec with PyYAML (not the server's route table) and checks three things:
  1. routes: the (method, path) pairs written in api/*.c route entries equal the spec's,
     and every "/v1..." or "/metrics" string literal in api/*.c is a spec path;
  2. live: against a running daemon, every spec route is served (never 404 with
     "route":"unknown", never 405), and every other method on a spec path is 405;
  3. captures: every response the end-to-end tests recorded (JSON lines of method, path,
     status, contentType, body) is a documented status of a spec route, with a content
     type the spec lists, and a JSON body valid against its schema.
The source scan (1) finds routes served but missing from the spec; the live probe (2)
proves the scan matches what the server really answers. Exit 0 when all hold.
Usage: spec_check.py --spec api/openapi.yaml --sources api --socket PATH [--captures FILE]
"""
import argparse
import glob
import http.client
import json
import re
import socket
import sys

import yaml

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
PLACEHOLDERS = {
    "id": "sbx_specprobe00000000000",
    "eid": "exe_specprobe00000000000",
    "pid": "999999",
    "port": "8080",
    "sid": "snp_specprobe00000000000",
    "name": "specprobe-none",
}


def request(sock_path, method, path, body=None):
    """One request; the head and body go out in one write. http.client sends them in two,
    and a daemon that answers from the head alone (404, 405) and closes without reading
    the body made the second write fail with EPIPE now and then."""
    payload = body.encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n"
    if body is not None:
        head += "Content-Type: application/json\r\n"
    if body is not None or method in ("POST", "PUT", "PATCH"):
        head += f"Content-Length: {len(payload)}\r\n"  # as http.client does
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    try:
        sock.connect(sock_path)
        sock.sendall(head.encode() + b"\r\n" + payload)
        resp = http.client.HTTPResponse(sock, method=method)
        resp.begin()
        # A stream of events (GET /v1/events) does not end: its head is the answer.
        streaming = (resp.getheader("Content-Type") or "").startswith("text/event-stream")
        data = b"" if streaming else resp.read()
    finally:
        sock.close()
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    return resp.status, doc


def spec_ops(spec):
    ops = set()
    for path, item in spec["paths"].items():
        for m in item:
            if m.upper() in METHODS:
                ops.add((m.upper(), path))
    return ops


def normalise(template):
    """/v1/sandboxes/{x}/y -> /v1/sandboxes/{}/y: parameter names do not matter."""
    return re.sub(r"\{[^}]*\}", "{}", template)


# ---- 1. the source scan -----------------------------------------------------------------

ROUTE_ENTRY = re.compile(r'\{\s*"(GET|POST|PUT|PATCH|DELETE)"\s*,\s*"([^"]+)"')
PATH_LITERAL = re.compile(r'"(/v1(?:/[^"\s]*)?|/metrics)"')


def check_sources(spec, sources, failures):
    spec_set = {(m, normalise(p)) for m, p in spec_ops(spec)}
    spec_paths = {normalise(p) for p in spec["paths"]}
    served = set()
    for f in sorted(glob.glob(sources + "/*.c")):
        text = open(f, encoding="utf-8").read()
        for lineno, line in enumerate(text.splitlines(), 1):
            for m, p in ROUTE_ENTRY.findall(line):
                served.add((m, normalise(p)))
            for p in PATH_LITERAL.findall(line):
                if normalise(p) not in spec_paths:
                    failures.append(f"{f}:{lineno}: path literal {p} is not a path of the spec")
    for m, p in sorted(served - spec_set):
        failures.append(f"served but not in the spec: {m} {p}")
    for m, p in sorted(spec_set - served):
        failures.append(f"in the spec but no route entry in the sources: {m} {p}")
    return served


# ---- 2. the live probe ------------------------------------------------------------------


def concrete(template):
    return re.sub(r"\{([^}]*)\}", lambda m: PLACEHOLDERS.get(m.group(1), "x"), template)


def unknown_route(status, doc):
    err = doc.get("error") if isinstance(doc, dict) else None
    return status == 404 and isinstance(err, dict) and err.get("route") == "unknown"


def check_live(spec, sock_path, failures):
    ops = spec_ops(spec)
    probes = 0
    # A malformed JSON body: JSON routes refuse it before acting, so probing has no effects.
    for method, template in sorted(ops):
        status, doc = request(sock_path, method, concrete(template), body="{")
        probes += 1
        if status == 405 or unknown_route(status, doc):
            failures.append(f"live: {method} {template} is in the spec but not served ({status})")
    for template in sorted(spec["paths"]):
        for method in METHODS:
            if (method, template) in ops:
                continue
            status, doc = request(sock_path, method, concrete(template))
            probes += 1
            if status != 405:
                failures.append(f"live: {method} {template} is not in the spec but answers {status}")
    # The probe must be able to see a missing route at all.
    status, doc = request(sock_path, "GET", "/v1/no-such-route-for-spec-check")
    if not unknown_route(status, doc):
        failures.append(f'live: an unknown route answers {status} {doc}, not 404 "route":"unknown"')
    return probes


# ---- 3. schemas of captured responses ----------------------------------------------------


def resolve(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        target = spec
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def type_ok(value, t):
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (
            isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown type {t}")


def validate(spec, schema, value, where, errors):
    """The subset the spec uses: type (arrays of types for nullable), enum, required,
    properties, additionalProperties, items, $ref."""
    schema = resolve(spec, schema)
    if not isinstance(schema, dict):
        return
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        if not any(type_ok(value, t) for t in types):
            errors.append(f"{where}: expected {'|'.join(types)}, got {json.dumps(value)[:80]}")
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {json.dumps(value)} is not one of {schema['enum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing required {key}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                validate(spec, props[key], v, f"{where}.{key}", errors)
            elif extra is False:
                errors.append(f"{where}: unexpected property {key}")
            elif isinstance(extra, dict):
                validate(spec, extra, v, f"{where}.{key}", errors)
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            validate(spec, schema["items"], v, f"{where}[{i}]", errors)


def match_route(spec, method, path):
    segs = path.split("/")
    best = None
    for template, item in spec["paths"].items():
        t = template.split("/")
        if len(t) != len(segs) or method.lower() not in item:
            continue
        literal = 0
        ok = True
        for a, b in zip(t, segs):
            if a.startswith("{"):
                ok = ok and b != ""
            elif a == b:
                literal += 1
            else:
                ok = False
        if ok and (best is None or literal > best[0]):
            best = (literal, template)
    return best[1] if best else None


def check_captures(spec, captures, failures):
    counted = 0
    seen = set()
    for lineno, line in enumerate(open(captures, encoding="utf-8"), 1):
        if not line.strip():
            continue
        c = json.loads(line)
        method, path, status = c["method"], c["path"].split("?")[0], c["status"]
        where = f"capture {lineno} ({method} {c['path']} -> {status})"
        template = match_route(spec, method, path)
        if not template:
            # Not a route: only a refusal, in the error shape (401 comes before routing).
            if status not in (401, 404, 405):
                failures.append(f"{where}: no spec route")
            errors = []
            validate(spec, spec["components"]["schemas"]["Error"], c.get("body"), "body", errors)
            if status == 404 and (c.get("body") or {}).get("error", {}).get("route") != "unknown":
                errors.append('a 404 for a path that is no route must say "route": "unknown"')
            failures.extend(f"{where}: {e}" for e in errors)
            counted += 1
            continue
        op = spec["paths"][template][method.lower()]
        responses = op["responses"]
        resp = responses.get(str(status)) or responses.get("default")
        if resp is None:
            failures.append(f"{where}: status {status} is not documented")
            continue
        resp = resolve(spec, resp)
        content = resp.get("content", {})
        ctype = (c.get("contentType") or "").split(";")[0].strip()
        if status in (101, 204) or not ctype:
            if content and status not in (101, 204):
                failures.append(f"{where}: no content type, the spec expects {list(content)}")
            counted += 1
            continue
        if ctype not in content:
            failures.append(f"{where}: content type {ctype} not in the spec ({list(content)})")
            continue
        if ctype == "application/json":
            errors = []
            validate(spec, content[ctype].get("schema", {}), c.get("body"), "body", errors)
            failures.extend(f"{where}: {e}" for e in errors)
        counted += 1
        seen.add((method, template))
    return counted, seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--sources", required=True)
    ap.add_argument("--socket")
    ap.add_argument("--captures")
    a = ap.parse_args()
    spec = yaml.safe_load(open(a.spec, encoding="utf-8"))
    if not str(spec.get("openapi", "")).startswith("3.1"):
        print("spec_check: the spec is not OpenAPI 3.1", file=sys.stderr)
        return 1
    failures = []
    served = check_sources(spec, a.sources, failures)
    probes = check_live(spec, a.socket, failures) if a.socket else 0
    counted, seen = check_captures(spec, a.captures, failures) if a.captures else (0, set())
    for f in failures:
        print("spec_check: " + f, file=sys.stderr)
    print(f"spec_check: {len(spec_ops(spec))} spec routes, {len(served)} in the sources, "
          f"{probes} live probes, {counted} captured responses validated "
          f"({len(seen)} routes with a JSON body seen); {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
