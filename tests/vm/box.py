#!/usr/bin/env python3
"""The box a container of deploy/daemonset.yaml runs in, read from the
manifest itself, as shell assignments for tests/vm/scenarios/confined.sh:

  BOX_CAPS      the capabilities it adds back (setpriv's --bounding-set form)
  BOX_MOUNTS    "HOSTPATH MOUNTPATH ro|rw" per volume mount (hostPath and
                configMap volumes; a configMap's HOSTPATH is "configmap:NAME")
  BOX_ARGS      command and args
  BOX_ENV       NAME=VALUE for its plain values and downward-API fields
                (spec.nodeName -> $NODE_NAME as the scenario sets it)

and refuses (exit 1) a container the scenario could not reproduce: one that
is privileged, keeps a capability it does not drop, or allows privilege
escalation. Usage: box.py MANIFEST CONTAINER
"""
import shlex
import sys

import yaml


def main(path, name):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    ds = next(d for d in docs if d.get("kind") == "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    containers = pod.get("initContainers", []) + pod["containers"]
    c = next((c for c in containers if c["name"] == name), None)
    if c is None:
        sys.exit(f"box.py: no container {name} in {path}")
    sc = c.get("securityContext", {})
    if sc.get("privileged"):
        sys.exit(f"box.py: {name} is privileged")
    if sc.get("allowPrivilegeEscalation", True):
        sys.exit(f"box.py: {name} allows privilege escalation")
    caps = sc.get("capabilities", {})
    if caps.get("drop") != ["ALL"]:
        sys.exit(f"box.py: {name} does not drop ALL capabilities")
    if not sc.get("readOnlyRootFilesystem"):
        sys.exit(f"box.py: {name} has a writable root filesystem")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = []
    for m in c.get("volumeMounts", []):
        v = volumes[m["name"]]
        if "hostPath" in v:
            src = v["hostPath"]["path"]
        elif "configMap" in v:
            src = "configmap:" + v["configMap"]["name"]
        else:
            sys.exit(f"box.py: volume {m['name']} is neither a hostPath nor a configMap")
        mounts.append(f"{src} {m['mountPath']} {'ro' if m.get('readOnly') else 'rw'}")
    env = []
    for e in c.get("env", []):
        if "value" in e:
            env.append(f"{e['name']}={e['value']}")
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            env.append(f"{e['name']}=$NODE_NAME")
    argv = c.get("command", []) + c.get("args", [])
    q = shlex.quote
    print("BOX_CAPS=" + q(",".join(a.lower() for a in caps.get("add", []))))
    print("BOX_MOUNTS=(" + " ".join(q(m) for m in mounts) + ")")
    print("BOX_ARGS=(" + " ".join(q(a) for a in argv) + ")")
    print("BOX_ENV=(" + " ".join(q(e) for e in env) + ")")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
