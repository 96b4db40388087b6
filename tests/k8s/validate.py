#!/usr/bin/env python3
"""tests/k8s/validate.py — every object under deploy/k8s/ checked against its schema: the
agent-sandbox CRDs (tests/k8s/crds, copied from agent-sandbox; each version's
openAPIV3Schema) and, for RuntimeClass, the fields the apiserver requires; the sandlot
policy (runtimeClassName sandlot, default-deny network policy) on the template; every
fixture under tests/k8s/bad/ must fail. Exit 0 only when all hold."""
import glob, os, re, sys

import jsonschema
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRDS = os.environ.get("SANDLOT_CRDS",
                      os.path.join(ROOT, "tests", "k8s", "crds"))
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
RUNTIMECLASS = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "handler"],
    "properties": {
        "apiVersion": {"const": "node.k8s.io/v1"},
        "metadata": {"type": "object", "required": ["name"]},
        "handler": {"type": "string", "pattern": DNS_LABEL, "maxLength": 63},
        "scheduling": {"type": "object", "properties": {
            "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}}},
            "additionalProperties": False},
    },
}


def crd_schemas():
    out = {}
    for f in glob.glob(os.path.join(CRDS, "*.yaml")):
        crd = yaml.safe_load(open(f))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            out[(f"{group}/{v['name']}", kind)] = v["schema"]["openAPIV3Schema"]
    return out


def strip_k8s_ext(schema):
    """The x-kubernetes-* keys mean nothing to jsonschema; int-or-string does."""
    if isinstance(schema, dict):
        if schema.get("x-kubernetes-int-or-string"):
            schema = dict(schema)
            schema.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        return {k: strip_k8s_ext(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
    if isinstance(schema, list):
        return [strip_k8s_ext(v) for v in schema]
    return schema


def policy(doc):
    """sandlot's own rules for its agent-sandbox objects."""
    if doc.get("kind") == "SandboxTemplate":
        spec = doc["spec"]
        if spec["podTemplate"]["spec"].get("runtimeClassName") != "sandlot":
            raise ValueError("SandboxTemplate: podTemplate.spec.runtimeClassName must be sandlot")
        np = spec.get("networkPolicy")
        if np is None or np.get("ingress") or np.get("egress"):
            raise ValueError("SandboxTemplate: networkPolicy must deny all (empty ingress/egress)")
        for c in spec["podTemplate"]["spec"].get("containers", []):
            if "limits" not in c.get("resources", {}):
                raise ValueError(f"SandboxTemplate: container {c.get('name')} has no limits")
            if c.get("securityContext", {}).get("privileged"):
                raise ValueError(f"SandboxTemplate: container {c.get('name')} is privileged")


def check(doc, schemas):
    key = (doc.get("apiVersion"), doc.get("kind"))
    if doc.get("kind") == "RuntimeClass":
        jsonschema.validate(doc, RUNTIMECLASS)
    elif key in schemas:
        jsonschema.validate(doc, strip_k8s_ext(schemas[key]))
        policy(doc)
    elif key in (("apps/v1", "DaemonSet"),):
        if not doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers"):
            raise ValueError("DaemonSet without containers")
    else:
        raise ValueError(f"no schema for {key}")


def docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def main():
    schemas = crd_schemas()
    if len(schemas) < 8:
        print(f"FAIL: found {len(schemas)} CRD versions under {CRDS}")
        return 1
    failures = 0
    good = sorted(glob.glob(os.path.join(ROOT, "deploy", "k8s", "*.yaml")))
    kinds = set()
    for f in good:
        for d in docs(f):
            try:
                check(d, schemas)
                kinds.add(d["kind"])
                print(f"ok   {os.path.relpath(f, ROOT)} {d['kind']}/{d['metadata']['name']}")
            except Exception as e:  # jsonschema.ValidationError, ValueError
                failures += 1
                print(f"FAIL {os.path.relpath(f, ROOT)}: {str(e).splitlines()[0]}")
    for k in ("RuntimeClass", "SandboxTemplate", "SandboxWarmPool", "SandboxClaim", "DaemonSet"):
        if k not in kinds:
            failures += 1
            print(f"FAIL deploy/k8s has no {k}")
    bad = sorted(glob.glob(os.path.join(ROOT, "tests", "k8s", "bad", "*.yaml")))
    if not bad:
        failures += 1
        print("FAIL no negative fixtures")
    for f in bad:
        try:
            for d in docs(f):
                check(d, schemas)
            failures += 1
            print(f"FAIL {os.path.relpath(f, ROOT)} was accepted")
        except Exception as e:
            print(f"ok   {os.path.relpath(f, ROOT)} refused: {str(e).splitlines()[0][:100]}")
    print("k8s manifests:", "FAIL" if failures else "all valid", f"({failures} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
