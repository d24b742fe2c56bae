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

# gateway_node prints the node of the cluster's gateway pod (client on the consumer, server on
# the provider).
gateway_node() {
  kc "$1" get pods --all-namespaces -l 'app.kubernetes.io/component in (gateway-client,gateway-server)' \
    -o jsonpath='{.items[0].spec.nodeName}'
}
# has_fabric says whether the cluster runs the fabric agent (the chart's liqo-fabric DaemonSet),
# which routes every node's pods into the tunnel.
has_fabric() { kc "$1" get daemonsets --all-namespaces -o name | grep '/liqo-fabric$' >/dev/null; }
# pod_on_node prints the name of a hello pod whose offloaded copy (same name, in namespace $2 of
# the provider) runs on the provider's node $1; it fails when there is none.
pod_on_node() {
  local name
  name=$(kc provider -n "$2" get pods -l app=hello --field-selector "spec.nodeName=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)
  [[ -n $name ]] && echo "$name"
}
# run_client runs the test image as pod default/$1 on the consumer's node $2 and waits for it.
run_client() {
  kc consumer -n default run "$1" --image=peerkit.local/test-http:v1 --image-pull-policy=Never --restart=Never \
    --overrides "{\"spec\":{\"nodeName\":\"$2\"}}" >/dev/null
  kc consumer -n default wait "pod/$1" --for=condition=Ready --timeout=60s >/dev/null
}
# cross_node asks the offloaded pods from a consumer pod on a node without the gateway, when the
# consumer has one (REAL_NODES=2): that takes the fabric agent; without it, it says so.
cross_node() {
  local other
  other=$(kc consumer get nodes -l '!liqo.io/type' -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep -vx "$consumer_gw" | sed -n 1p || true)
  [[ -n $other ]] || return 0
  step "cross-node traffic: from the consumer's node $other, which has no gateway"
  if [[ $fabric == false ]]; then
    echo "skipped: a pod on $other reaches offloaded pods only through the fabric agent (the liqo-fabric DaemonSet),"
    echo "which routes every node's pods into the tunnel; this chart has none, so only the gateway's node $consumer_gw does"
    return 0
  fi
  run_client client-2 "$other"
  local p a
  for p in $(kc consumer -n demo get pods -l app=hello -o jsonpath='{.items[*].metadata.name}'); do
    a=$(kc consumer -n demo get pod "$p" -o jsonpath='{.status.podIP}')
    echo "from consumer pod default/client-2 on $other: GET http://$a:8080/ (demo/$p, on the provider's node $(kc provider -n "$remote" get pod "$p" -o jsonpath='{.spec.nodeName}')) answers:"
    kc consumer -n default exec client-2 -- /test-http get "http://$a:8080/"
  done
}

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

# The demo's working copy of examples/peering, in the sandbox's folder: its state is that
# folder's terraform.tfstate, where terraform keeps it by default (the -state flag is deprecated),
# and it goes with the sandbox (make sandbox-down).
WORK=$STATE/peering
mkdir -p "$WORK"
cp "$ROOT"/examples/peering/*.tf "$WORK/"
vars+=(-var "consumer_kubeconfig=$STATE/consumer.kubeconfig" -var "provider_kubeconfig=$STATE/provider.kubeconfig")

step "terraform apply examples/peering, in its copy $WORK (nodes: $nodes, networking = $networking)"
start=$(date +%s%N)
terraform -chdir="$WORK" apply -auto-approve -input=false "${vars[@]}"
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
if [[ $nodes == real ]]; then
  step "the provider's nodes (real: a kubelet with containerd each; several are joined by flannel)"
  kc provider get nodes -o wide
fi
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
  fabric=false
  if [[ $nodes == real ]]; then
    # Without the fabric agent only the gateway's node routes into the tunnel, on each side:
    # ask an offloaded pod on the provider's gateway node, from the consumer's gateway node.
    has_fabric consumer && has_fabric provider && fabric=true
    consumer_gw=$(gateway_node consumer)
    if [[ $fabric == false ]]; then
      pod=$(pod_on_node "$(gateway_node provider)" "$remote" || echo "$pod")
    fi
  fi
  ip=""
  for _ in $(seq 50); do
    ip=$(kc consumer -n demo get pod "$pod" -o jsonpath='{.status.podIP}')
    [[ -n $ip ]] && break
    sleep 0.2
  done
  echo "the consumer's pod demo/$pod runs on the provider at $ip"
  if [[ $nodes == real ]]; then
    # A pod of the consumer's own node asks the offloaded pod, which answers its name.
    run_client client "$consumer_gw"
    echo "from consumer pod default/client ($(kc consumer -n default get pod client -o jsonpath='{.status.podIP}')): GET http://$ip:8080/ answers:"
    kc consumer -n default exec client -- /test-http get "http://$ip:8080/"
    cross_node
  else
    # KWOK plays the nodes; the sandbox gives each running pod its address in the cluster's pod
    # network and answers HTTP there with the pod's name (internal/test/sandbox/podnet.go).
    "$SANDBOX_BIN" -state "$STATE" request consumer "$ip"
  fi
fi

cat <<MSG

Done. Try (no changes):
  export TF_CLI_CONFIG_FILE=$STATE/terraformrc
  terraform -chdir=$WORK plan $(printf '%q ' "${vars[@]}")
then add -var memory=2Gi to re-negotiate in place, and run 'make sandbox-down' to stop everything.
MSG
