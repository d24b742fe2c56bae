#!/usr/bin/env bash
# The main job on the sandbox: peer its two clusters with `terraform apply` (examples/peering),
# offload the consumer's "demo" namespace, run a Deployment there, and show where it runs.
# Run through `make demo`, which starts the sandbox first.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${SANDBOX_STATE:-$ROOT/.sandbox}
KUBECTL=${KUBECTL:-$ROOT/bin/testbed/kubectl}
SANDBOX_BIN=${SANDBOX_BIN:-$ROOT/bin/liqo-sandbox}
export TF_CLI_CONFIG_FILE=$STATE/terraformrc
export TF_IN_AUTOMATION=1
step() { printf '\n==> %s\n' "$*"; }
kc() { local cluster=$1; shift; "$KUBECTL" --kubeconfig "$STATE/$cluster.kubeconfig" --cache-dir "$ROOT/.cache/kube" "$@"; }

if [[ ! -f $STATE/ready ]]; then
  echo "the sandbox is not running: run 'make demo' (or 'make sandbox' first)" >&2
  exit 1
fi
networking=false
if [[ $(cat "$STATE/networking" 2>/dev/null) == enabled ]]; then
  networking=true
else
  echo "note: no tunnel: the sandbox's networking is $(cat "$STATE/networking" 2>/dev/null || echo disabled), so the peering has networking = false"
fi

nodes=$(cat "$STATE/nodes" 2>/dev/null || echo kwok)
vars=(-var "networking=$networking")
if [[ $nodes == real ]]; then
  # Real nodes: the gateway server is a pod reached on a NodePort (no load balancer here), and
  # the provider's node has 2 CPUs, half of which it shares.
  vars+=(-var gateway_service_type=NodePort -var cpu=1 -var memory=1Gi -var pods=20)
fi

step "terraform apply examples/peering (nodes: $nodes, networking = $networking)"
start=$(date +%s%N)
terraform -chdir="$ROOT/examples/peering" apply -auto-approve -input=false -state="$STATE/peering.tfstate" \
  "${vars[@]}" -var "consumer_kubeconfig=$STATE/consumer.kubeconfig" \
  -var "provider_kubeconfig=$STATE/provider.kubeconfig"
echo "applied in $(( ($(date +%s%N) - start) / 1000000 )) ms"

step "offload the consumer's namespace demo and run a 3-replica Deployment there"
kc consumer apply -f - <<'YAML'
apiVersion: offloading.liqo.io/v1beta1
kind: NamespaceOffloading
metadata:
  name: offloading
  namespace: demo
spec:
  namespaceMappingStrategy: DefaultName
  podOffloadingStrategy: Remote
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
  namespace: demo
spec:
  replicas: 3
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      containers:
        - name: hello
          # Built locally and imported into real nodes (nothing is pulled); KWOK only names it.
          image: peerkit.local/test-http:v1
          imagePullPolicy: Never
          resources:
            requests: {cpu: 100m, memory: 64Mi}
YAML
kc consumer -n demo wait namespaceoffloading/offloading --for=jsonpath='{.status.offloadingPhase}'=Ready --timeout=60s
kc consumer -n demo rollout status deployment/hello --timeout=120s

step "kubectl get foreignclusters (consumer, then provider)"
kc consumer get foreignclusters
kc provider get foreignclusters
step "the consumer's nodes: the virtual node stands for the provider"
kc consumer get nodes -o wide
step "the Deployment's pods on the consumer, bound to the virtual node"
kc consumer -n demo get pods -o wide
remote=$(kc consumer -n demo get namespaceoffloading offloading -o jsonpath='{.status.remoteNamespaceName}')
step "the same pods running on the provider, in namespace $remote"
kc provider -n "$remote" get pods -o wide
if [[ $networking == true ]]; then
  step "the tunnel: the Connection on each side (the gateways' status)"
  for cluster in consumer provider; do
    kc "$cluster" wait connections --all --all-namespaces --for=jsonpath='{.status.value}'=Connected --timeout=60s >/dev/null
    echo "# $cluster"
    kc "$cluster" get connections --all-namespaces -o wide
  done
  step "pod-to-pod traffic through the tunnel: from the consumer's pod network to an offloaded pod"
  pod=$(kc consumer -n demo get pods -l app=hello -o jsonpath='{.items[0].metadata.name}')
  ip=""
  for _ in $(seq 50); do
    ip=$(kc consumer -n demo get pod "$pod" -o jsonpath='{.status.podIP}')
    [[ -n $ip ]] && break
    sleep 0.2
  done
  echo "the consumer's pod demo/$pod runs on the provider at $ip"
  if [[ $nodes == real ]]; then
    # A pod of the consumer's own node asks the offloaded pod, which answers its name.
    kc consumer -n default run client --image=peerkit.local/test-http:v1 --image-pull-policy=Never --restart=Never >/dev/null
    kc consumer -n default wait pod/client --for=condition=Ready --timeout=60s >/dev/null
    echo "from consumer pod default/client ($(kc consumer -n default get pod client -o jsonpath='{.status.podIP}')): GET http://$ip:8080/ answers:"
    kc consumer -n default exec client -- /test-http get "http://$ip:8080/"
  else
    # KWOK plays the nodes; the sandbox gives each running pod its address in the cluster's pod
    # network and answers HTTP there with the pod's name (internal/sandbox/podnet.go).
    "$SANDBOX_BIN" -state "$STATE" request consumer "$ip"
  fi
fi

cat <<MSG

Done. Try: terraform -chdir=examples/peering plan -state=$STATE/peering.tfstate ${vars[*]}
(no changes; with TF_CLI_CONFIG_FILE=$STATE/terraformrc), add -var memory=2Gi to re-negotiate in place,
and 'make sandbox-down' to stop everything.
MSG
