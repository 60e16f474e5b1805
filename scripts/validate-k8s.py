#!/usr/bin/env python3
"""Validate Kubernetes objects (YAML or JSON files, several documents each;
"-" for stdin) as the API server would with strict field validation:

- built-in kinds against the Kubernetes schemas the kubernetes-validate
  package carries (strict: an unknown field is an error), for each version
  given with -k (default: 1.34.0, the first with DRA at resource.k8s.io/v1,
  and 1.37.0, the newest it has);
- custom kinds against the upstream CRD schemas kept in tests/fixtures/crds/
  (scripts/crd-schema.py wrote them; each names its source and commit), made
  strict the way the API server is: an object field a schema does not name
  is an error unless the schema preserves unknown fields.

A kind with neither is an error. Prints one line per object; exits 1 if any
is invalid, 2 on bad usage.
"""
import argparse
import glob
import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CRDS = os.path.join(HERE, "..", "tests", "fixtures", "crds")
BUILTIN_GROUPS = {
    "", "apps", "batch", "rbac.authorization.k8s.io", "policy", "networking.k8s.io",
    "resource.k8s.io", "storage.k8s.io", "scheduling.k8s.io", "coordination.k8s.io",
    "apiextensions.k8s.io", "admissionregistration.k8s.io", "autoscaling", "node.k8s.io",
    "discovery.k8s.io", "certificates.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
}


def load_crds():
    crds = {}
    for path in sorted(glob.glob(os.path.join(CRDS, "*.json"))):
        crd = json.load(open(path))
        for version, schema in crd["versions"].items():
            root = strict(schema)
            # What every object has, whether its CRD's schema names it or not.
            props = root.setdefault("properties", {})
            for field in ("apiVersion", "kind"):
                props.setdefault(field, {"type": "string"})
            props.setdefault("metadata", {"type": "object"})
            crds[(crd["group"], version, crd["kind"])] = (root, os.path.basename(path))
    return crds


def strict(node):
    """The API server's view of a structural schema as JSON Schema: unknown
    fields refused, `nullable` allowing null, the x-kubernetes extensions
    honoured where they loosen."""
    if isinstance(node, list):
        return [strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) if k in ("properties", "items", "additionalProperties", "allOf", "anyOf", "oneOf", "not")
           else v for k, v in node.items()}
    if "properties" in out:
        out["properties"] = {k: strict(v) for k, v in node["properties"].items()}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if (out.get("type") == "object" and "properties" in out and "additionalProperties" not in out
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def group_version(api_version):
    group, _, version = api_version.rpartition("/")
    return group, version


def validate(doc, versions, crds):
    kind, api_version = doc.get("kind"), doc.get("apiVersion", "")
    if not kind or not api_version:
        return ["no kind or apiVersion"]
    if kind == "List":
        return [e for item in doc.get("items", []) for e in validate(item, versions, crds)]
    group, version = group_version(api_version)
    if group in BUILTIN_GROUPS:
        errors = []
        for k8s in versions:
            try:
                kubernetes_validate.validate(doc, k8s, strict=True)
            except kubernetes_validate.ValidationError as e:
                where = "/".join(str(p) for p in e.path)
                errors.append(f"Kubernetes {k8s}: {where}: {e.message}")
            except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as e:
                errors.append(f"Kubernetes {k8s}: no schema for {api_version} {kind}: {e}")
        return errors
    found = crds.get((group, version, kind))
    if not found:
        return [f"no schema for {api_version} {kind} (no built-in kind, nothing in tests/fixtures/crds/)"]
    schema, _ = found
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def documents(path):
    text = sys.stdin.read() if path == "-" else open(path).read()
    for doc in yaml.safe_load_all(text):
        if doc:
            yield doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", "--kubernetes-version", action="append", dest="versions")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    versions = args.versions or ["1.34.0", "1.37.0"]
    crds = load_crds()
    bad = 0
    for path in args.files:
        try:
            docs = list(documents(path))
        except (OSError, yaml.YAMLError) as e:
            print(f"{path}: cannot read: {e}")
            bad += 1
            continue
        for doc in docs:
            name = f"{path}: {doc.get('kind')} {doc.get('metadata', {}).get('name', '?')}"
            errors = validate(doc, versions, crds)
            if errors:
                bad += 1
                for e in errors:
                    print(f"{name}: INVALID: {e}")
            else:
                print(f"{name}: valid")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
