#!/bin/sh
# Sets the floor of one HorizontalPodAutoscaler (spec.minReplicas) and nothing else: the HPA keeps
# deciding how many pods run, and its scale-down window and policies still apply to every pod
# above the new floor, so lowering the floor never takes a serving pod away at once.
#   HPA    the HorizontalPodAutoscaler's name (the Role allows get and patch on this one only)
#   FLOOR  the floor wanted; anything below 1 becomes 1: one warm pod always stays
#   MODE   set: make it FLOOR; raise: only if the floor now is lower (a pre-scaled peak floor
#          set earlier is not lowered by the morning's routine raise)
# It talks to the API server with the pod's service-account token, so the image needs only a
# shell and curl.
set -eu
: "${HPA:?}" "${FLOOR:?}" "${MODE:=set}"
sa=${SERVICE_ACCOUNT_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
api=${KUBERNETES_API:-https://kubernetes.default.svc}
namespace=$(cat "$sa/namespace")
url="$api/apis/autoscaling/v2/namespaces/$namespace/horizontalpodautoscalers/$HPA"

case "$FLOOR" in
  '' | *[!0-9]*) echo "FLOOR must be a whole number, got '$FLOOR'" >&2; exit 2 ;;
esac
case "$MODE" in
  set | raise) ;;
  *) echo "MODE must be set or raise, got '$MODE'" >&2; exit 2 ;;
esac
floor=${FLOOR#"${FLOOR%%[!0]*}"}  # no leading zeros: "08" is not octal to anyone
if [ "${floor:-0}" -lt 1 ]; then floor=1; fi

api_call() {
  curl --silent --show-error --fail --max-time 30 --retry 3 \
    --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" "$@"
}

# An HPA without spec.minReplicas has a floor of 1. Its JSON has no other "minReplicas" key (the
# escaped copy inside a last-applied-configuration annotation does not match the pattern).
current=$(api_call "$url" | sed -n 's/.*"minReplicas": *\([0-9][0-9]*\).*/\1/p' | head -n 1)
current=${current:-1}
if [ "$MODE" = raise ] && [ "$current" -ge "$floor" ]; then
  echo "$HPA: floor stays $current (asked to raise it to $floor)"
  exit 0
fi
api_call -X PATCH -H 'Content-Type: application/merge-patch+json' \
  --data "{\"spec\":{\"minReplicas\":$floor}}" "$url" >/dev/null
echo "$HPA: floor $current -> $floor"
