"""Checks the HTTP API against api/openapi.yaml with a real JSON Schema validator.

usage: check_contract.py SPEC ROUTES EXCHANGES

ROUTES holds the routes the daemon serves ("METHOD PATH" lines); every one must be
in the spec and every spec operation must be served. EXCHANGES holds real requests
and responses (JSON lines: method, path, status, content_type, body); each response
must be one the spec documents for that route and status, and its body must
validate against the schema the spec gives (event streams: every event's data).
"""
import json
import sys

import yaml
from jsonschema import Draft202012Validator, RefResolver

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def follow(spec, node):
    """Resolves a local $ref chain (path items, responses)."""
    while isinstance(node, dict) and "$ref" in node:
        target = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def spec_routes(spec):
    routes = {}
    for path, item in spec["paths"].items():
        item = follow(spec, item)
        for method, operation in item.items():
            if method in METHODS:
                routes[(method.upper(), path)] = operation
    return routes


def template_for(path, templates):
    got = [p for p in path.split("/") if p]
    for template in templates:
        want = [p for p in template.split("/") if p]
        if len(want) == len(got) and all(w == g or w.startswith("{") for w, g in zip(want, got)):
            return template
    return None


def main(spec_file, routes_file, exchanges_file):
    spec = yaml.safe_load(open(spec_file))
    resolver = RefResolver.from_schema(spec)
    failures = []

    def validate(schema, value, what):
        errors = list(Draft202012Validator(schema, resolver=resolver).iter_errors(value))
        for e in errors[:3]:
            failures.append(f"{what}: {e.message} at {list(e.absolute_path)}")
        return not errors

    # Each event's data schema, by its name: the spec's Event.
    event_schemas = {
        kind["properties"]["event"]["const"]: kind["properties"]["data"]
        for kind in spec["components"]["schemas"]["Event"]["oneOf"]
    }
    documented = spec_routes(spec)
    served = set()
    for line in open(routes_file):
        if line.strip():
            method, path = line.split()
            served.add((method, path))
    for route in sorted(served - set(documented)):
        failures.append(f"served but not in the spec: {route[0]} {route[1]}")
    for route in sorted(set(documented) - served):
        failures.append(f"in the spec but not served: {route[0]} {route[1]}")

    checked = 0
    seen = set()
    templates = {path for _, path in documented}
    for line in open(exchanges_file):
        x = json.loads(line)
        template = template_for(x["path"].split("?")[0], templates)
        what = f'{x["method"]} {x["path"]} -> {x["status"]}'
        operation = documented.get((x["method"], template)) if template else None
        if operation is None:
            # No such route: the problem must still be a problem.
            if x["status"] in (404, 405):
                validate({"$ref": "#/components/schemas/Problem"}, json.loads(x["body"]), what)
                checked += 1
            else:
                failures.append(f"{what}: not a documented route")
            continue
        responses = operation["responses"]
        response = responses.get(str(x["status"])) or responses.get("default")
        if response is None:
            failures.append(f"{what}: status not documented")
            continue
        response = follow(spec, response)
        media = x["content_type"].split(";")[0].strip()
        content = response.get("content", {})
        if media not in content:
            failures.append(f"{what}: content type {media} not documented ({list(content)})")
            continue
        schema = content[media].get("schema", {})
        if media == "text/event-stream":
            events = parse_events(x["body"])
            for event, data in events:
                schema = event_schemas.get(event)
                if not schema:
                    failures.append(f"{what}: undocumented event {event}")
                    continue
                validate(schema, json.loads(data), f"{what} event {event}")
            seen.update(f"event {e}" for e, _ in events)
        elif media.endswith("json"):
            try:
                body = json.loads(x["body"])
            except ValueError as e:
                failures.append(f"{what}: not JSON: {e}")
                continue
            validate(schema, body, what)
        seen.add(f'{x["method"]} {template} {x["status"]}')
        checked += 1

    for f in failures:
        print("FAIL:", f)
    print(f"{checked} exchanges checked against {len(documented)} documented operations; "
          f"{len(served)} routes served; {len(failures)} problems")
    print("covered:", ", ".join(sorted(seen)))
    return 1 if failures or checked == 0 else 0


def parse_events(text):
    events, event, data = [], None, []
    for line in text.split("\n"):
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and event:
            events.append((event, "\n".join(data)))
            event, data = None, []
    return events


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
