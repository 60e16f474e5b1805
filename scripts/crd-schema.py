#!/usr/bin/env python3
"""Keep an upstream CRD's schema for tests/fixtures/crds/ (what
scripts/validate-k8s.py checks custom objects against): the structure of
each served version's openAPIV3Schema (names, types, enums, required,
patterns), without the prose (descriptions), with where it came from.

  scripts/crd-schema.py CRD.yaml SOURCE-URL COMMIT > tests/fixtures/crds/<plural>.<group>.json
"""
import json
import sys

import yaml


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main(path, source, commit):
    crd = next(d for d in yaml.safe_load_all(open(path)) if d and d.get("kind") == "CustomResourceDefinition")
    spec = crd["spec"]
    out = {
        "source": source,
        "commit": commit,
        "annotations": {k: v for k, v in crd["metadata"].get("annotations", {}).items() if "version" in k},
        "group": spec["group"],
        "kind": spec["names"]["kind"],
        "scope": spec["scope"],
        "versions": {
            v["name"]: strip(v["schema"]["openAPIV3Schema"]) for v in spec["versions"] if v.get("served", True)
        },
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
