#!/bin/bash
# Issue 34's burst: 200 echo calls (100m each) from 4 requesters at once through Kueue's
# LocalQueue toolgate on the local cluster (make up first); prints outcomes, time to result and
# each requester's share of the completions. docs/bursts.md, "Measured".
source "$(dirname "$0")/../.cluster/cluster.env"
export PATH="$(cd "$(dirname "$0")/.." && pwd)/bin/k8s:$PATH"
set -euo pipefail
NS=toolgate-demo; SC=burst-$(date +%s)
subs=""
for i in 1 2 3 4; do
  kubectl -n $NS create sa burst-r$i >/dev/null 2>&1 || true
  kubectl -n $NS create rolebinding burst-r$i --clusterrole=toolgate-agent --serviceaccount=$NS:burst-r$i >/dev/null 2>&1 || true
  subs="$subs\"system:serviceaccount:$NS:burst-r$i\","
done
kubectl apply -f - >/dev/null <<Y
apiVersion: toolgate.dev/v1alpha1
kind: ToolScope
metadata: {name: $SC, namespace: $NS, labels: {toolgate.dev/bench-burst: "true"}}
spec:
  subjects: [${subs%,}]
  admission: {queueName: toolgate, maxWait: 10m}
---
apiVersion: toolgate.dev/v1alpha1
kind: Tool
metadata: {name: $SC-echo, namespace: $NS, labels: {toolgate.dev/bench-burst: "true"}}
spec:
  scope: $SC
  name: echo
  description: echo
  timeout: 10s
  parameters: {type: object}
  body: {image: "toolgate.local/tools:dev", command: [/tools/echo], runnerInImage: true, resources: {requests: {cpu: 100m}}}
  sandbox: {scratch: None}
Y
sleep 3
start=$(date +%s.%N)
for i in 1 2 3 4; do
  ( for j in $(seq 1 50); do printf -- "---\napiVersion: toolgate.dev/v1alpha1\nkind: ToolCall\nmetadata: {generateName: b$i-, namespace: $NS, labels: {burst: \"$SC\", requester: r$i}}\nspec: {tool: echo, scope: $SC, arguments: {n: $j}}\n"; done ) > /tmp/burst-$i.yaml
done
for i in 1 2 3 4; do kubectl create -f /tmp/burst-$i.yaml --as=system:serviceaccount:$NS:burst-r$i >/dev/null & done; wait
created=$(date +%s.%N)
echo "created 200 in $(echo "$created - $start" | bc) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
while :; do
  n=$(kubectl -n $NS get toolcalls -l burst=$SC -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -cE "Succeeded|Failed|Denied" || true)
  [ "$n" -ge 200 ] && break; sleep 2
done
done_at=$(date +%s.%N)
echo "all terminal after $(echo "$done_at - $created" | bc) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
kubectl -n $NS get toolcalls -l burst=$SC -o json > /tmp/burst-$SC.json
python3 - /tmp/burst-$SC.json <<'P'
import json,sys,datetime,collections
d=json.load(open(sys.argv[1]))
ph=collections.Counter(); ends=[]
def t(s): return datetime.datetime.fromisoformat(s.replace('Z','+00:00')).timestamp()
for c in d['items']:
    r=c['status'].get('result',{}).get('reason'); ph[(c['status']['phase'],r)]+=1
    ends.append((t(c['status']['completionTime'])-t(c['metadata']['creationTimestamp']), c['metadata']['labels']['requester'], t(c['status']['completionTime'])))
print(dict(ph))
lat=sorted(e[0] for e in ends); print("time to result p50 %.0fs p95 %.0fs max %.0fs"%(lat[len(lat)//2], lat[int(len(lat)*.95)], lat[-1]))
ends.sort(key=lambda e:e[2])
for frac in (0.25,0.5,0.75):
    k=int(len(ends)*frac); cnt=collections.Counter(e[1] for e in ends[:k]); print("first %d done by requester: %s"%(k, dict(sorted(cnt.items()))))
P
kubectl delete toolscope,tool -n $NS -l toolgate.dev/bench-burst=true >/dev/null
