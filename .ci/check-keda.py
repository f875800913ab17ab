"""Checks a rendering of deploy/k8s/overlays/keda: the ScaledObject against KEDA's own schema, the
rest left for kubernetes-validate.

KEDA's CRD is not on any package registry this project can reach, but cloudcoil-models-keda is:
pydantic models generated from the keda.sh/v1alpha1 CRDs of one KEDA release (2.16.1). Each
ScaledObject is validated against them (types, required fields), then dumped back: any field the
schema does not know is dropped by the models, so a dump that differs from the input names an
unknown field (the strictness kubernetes-validate --strict gives the plain objects). A trigger's
metadata is a free string map in the CRD, so the cron and cpu triggers' keys are checked against
KEDA's scaler documentation here.

Usage: check-keda.py RENDERED.yaml PLAIN_OUT.yaml (every object but the ScaledObjects goes to
PLAIN_OUT.yaml, for kubernetes-validate).
"""
from __future__ import annotations

import sys

import yaml
from cloudcoil.models.keda.v1alpha1 import ScaledObject

# From KEDA's scaler docs (cron: all four required; cpu: value required, containerName optional,
# metadata.type deprecated in favour of the trigger's metricType).
CRON_KEYS = {"timezone", "start", "end", "desiredReplicas"}
CPU_KEYS = {"value"}
CPU_OPTIONAL_KEYS = {"containerName"}
METRIC_TYPES = {"Utilization", "AverageValue"}


def unknown_fields(given: object, known: object, path: str = "") -> list[str]:
    if isinstance(given, dict):
        if not isinstance(known, dict):
            return [path or "/"]
        out = []
        for key, value in given.items():
            if key not in known:
                out.append(f"{path}/{key}")
            else:
                out += unknown_fields(value, known[key], f"{path}/{key}")
        return out
    if isinstance(given, list):
        if not isinstance(known, list) or len(known) != len(given):
            return [path]
        return [p for i, (g, k) in enumerate(zip(given, known)) for p in unknown_fields(g, k, f"{path}/{i}")]
    return []


def check_triggers(spec: dict) -> list[str]:
    problems = []
    for i, trigger in enumerate(spec.get("triggers", [])):
        metadata = trigger.get("metadata", {})
        where = f"/spec/triggers/{i} ({trigger.get('type')})"
        if trigger.get("type") == "cron":
            if set(metadata) != CRON_KEYS:
                problems.append(f"{where}: metadata keys {sorted(metadata)}, the cron scaler takes {sorted(CRON_KEYS)}")
            if metadata.get("start") == metadata.get("end"):
                problems.append(f"{where}: start and end must differ")
            if len(str(metadata.get("start", "")).split()) != 5 or len(str(metadata.get("end", "")).split()) != 5:
                problems.append(f"{where}: start and end are five-field cron expressions")
            if not str(metadata.get("desiredReplicas", "")).isdigit() or int(metadata["desiredReplicas"]) < 1:
                problems.append(f"{where}: desiredReplicas must be a whole number >= 1")
        elif trigger.get("type") == "cpu":
            if trigger.get("metricType") not in METRIC_TYPES:
                problems.append(f"{where}: metricType must be one of {sorted(METRIC_TYPES)}")
            if not CPU_KEYS <= set(metadata) <= CPU_KEYS | CPU_OPTIONAL_KEYS:
                problems.append(f"{where}: metadata keys {sorted(metadata)}, the cpu scaler takes value (and containerName)")
    return problems


def main(rendered: str, plain_out: str) -> int:
    with open(rendered) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    plain = [d for d in docs if d.get("kind") != "ScaledObject"]
    scaled = [d for d in docs if d.get("kind") == "ScaledObject"]
    problems = []
    if not scaled:
        problems.append("no ScaledObject in the rendering")
    if any(d.get("kind") == "HorizontalPodAutoscaler" for d in plain):
        problems.append("a HorizontalPodAutoscaler is left beside the ScaledObject: KEDA makes its own, two would fight")
    deployments = {d["metadata"]["name"] for d in plain if d.get("kind") == "Deployment"}
    for doc in scaled:
        name = doc["metadata"]["name"]
        # strict: "8" is not an integer to the API server either. Raises on a wrong type or a
        # missing required field.
        model = ScaledObject.model_validate(doc, strict=True)
        dumped = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
        problems += [f"ScaledObject/{name}: unknown field {p}" for p in unknown_fields(doc, dumped)]
        spec = doc["spec"]
        problems += [f"ScaledObject/{name}: {p}" for p in check_triggers(spec)]
        if spec["scaleTargetRef"]["name"] not in deployments:
            problems.append(f"ScaledObject/{name}: scaleTargetRef names no Deployment of this rendering")
        if spec.get("minReplicaCount", 0) < 1:
            problems.append(f"ScaledObject/{name}: minReplicaCount must be >= 1 (one warm pod always)")
    with open(plain_out, "w") as f:
        yaml.safe_dump_all(plain, f, sort_keys=False)
    for problem in problems:
        print(f"ERROR {problem}")
    if problems:
        return 1
    print(f"{len(scaled)} ScaledObject(s) valid against cloudcoil-models-keda's keda.sh/v1alpha1 schema "
          "(KEDA 2.16.1 CRDs), no unknown field, cron and cpu trigger metadata as KEDA documents them")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
