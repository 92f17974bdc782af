#!/bin/bash
# Issue 34's burst: 200 echo calls (100m each) from 4 requesters at once through Kueue's
# LocalQueue toolgate on the local cluster (make up first); prints outcomes, time to result and
# each requester's share of the completions. docs/bursts.md, "Measured".
#   KILLS=6 hack/bench-burst.sh   the same burst while the operator's leader is deleted 6 times
#                                 (alternately graceful and --grace-period=0 --force, each once both
#                                 replicas are Ready again), then Jobs and Pod starts per attempt
#                                 counted from the cluster (snapshots every 3 s; Jobs by call,
#                                 Pods by attempt label). docs/reports/2026-12-06-bursts-handover.md.
#   QUEUES=4 hack/bench-burst.sh  each requester its own scope and LocalQueue, into a ClusterQueue
#                                 of its own in Cohort toolgate (nominal quota 0, borrowing, as
#                                 make up's toolgate: hack/addons/kueue.sh group): Kueue's fair
#                                 sharing between the four.
#   QUEUES=4 CAP=1 hack/bench-burst.sh  the same, each group borrowing at most a quarter of the
#                                 Cohort's quota (docs/bursts.md, "Fair shares").
#   STAGGER=5 ...                 r1's 50 calls created 5 s before the other 150.
# Shares: at each quarter of the completions (and of the admissions, the Jobs' Resumed events),
# each requester's count against the mean, in % and in calls; "within 10 %" when every count is
# within 10 % of the mean at 25, 50 and 75 %.
source "$(dirname "$0")/../.cluster/cluster.env"
export PATH="$(cd "$(dirname "$0")/.." && pwd)/bin/k8s:$PATH"
set -euo pipefail
NS=toolgate-demo; SC=burst-$(date +%s); KILLS=${KILLS:-0}; SYS=toolgate-system
OUT=/tmp/$SC; mkdir -p "$OUT"
subs=""
for i in 1 2 3 4; do
  kubectl -n $NS create sa burst-r$i >/dev/null 2>&1 || true
  kubectl -n $NS create rolebinding burst-r$i --clusterrole=toolgate-agent --serviceaccount=$NS:burst-r$i >/dev/null 2>&1 || true
  subs="$subs\"system:serviceaccount:$NS:burst-r$i\","
done
QUEUES=${QUEUES:-1}; CAP=${CAP:-0}
# A requester group borrows at most the Cohort's quota divided by share (1: all of it).
share=1; if [ "$CAP" = 1 ]; then share=$QUEUES; fi
scope_of() { if [ "$QUEUES" -gt 1 ]; then echo "$SC-r$1"; else echo "$SC"; fi; }
{
  for g in $(seq 1 "$QUEUES"); do
    sc=$SC; queue=toolgate; who="${subs%,}"
    if [ "$QUEUES" -gt 1 ]; then
      sc=$(scope_of "$g"); queue=$sc; who="\"system:serviceaccount:$NS:burst-r$g\""
      "$(dirname "$0")/addons/kueue.sh" group "$sc" $NS "$share" >&2
    fi
    cat <<Y
---
apiVersion: toolgate.dev/v1alpha1
kind: ToolScope
metadata: {name: $sc, namespace: $NS, labels: {toolgate.dev/bench-burst: "true"}}
spec:
  subjects: [$who]
  admission: {queueName: $queue, maxWait: 10m}
---
apiVersion: toolgate.dev/v1alpha1
kind: Tool
metadata: {name: $sc-echo, namespace: $NS, labels: {toolgate.dev/bench-burst: "true"}}
spec:
  scope: $sc
  name: echo
  description: echo
  timeout: 10s
  parameters: {type: object}
  body: {image: "toolgate.local/tools:dev", command: [/tools/echo], runnerInImage: true, resources: {requests: {cpu: 100m}}}
  sandbox: {scratch: None}
Y
  done
} | kubectl apply -f - >/dev/null
sleep 3
start=$(date +%s.%N)
for i in 1 2 3 4; do
  ( for j in $(seq 1 50); do printf -- "---\napiVersion: toolgate.dev/v1alpha1\nkind: ToolCall\nmetadata: {generateName: b$i-, namespace: $NS, labels: {burst: \"$SC\", requester: r$i}}\nspec: {tool: echo, scope: $(scope_of $i), arguments: {n: $j}}\n"; done ) > /tmp/burst-$i.yaml
done
# STAGGER=S: r1's calls first, the others' S seconds later (whoever reaches Kueue first).
for i in 1 2 3 4; do
  kubectl create -f /tmp/burst-$i.yaml --as=system:serviceaccount:$NS:burst-r$i >/dev/null &
  if [ "$i" = 1 ] && [ "${STAGGER:-0}" != 0 ]; then wait; sleep "$STAGGER"; fi
done; wait
created=$(date +%s.%N)
echo "created 200 in $(echo "$created - $start" | bc) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
snap_pid=""; kill_pid=""
if [ "$KILLS" -gt 0 ]; then
  # Every tool Job and Pod of the namespace, every 3 s: Jobs and Pods live --job-retention after
  # their attempt ended, the snapshots keep what a later listing would miss.
  ( k=0; while :; do kubectl -n $NS get jobs,pods -l app.kubernetes.io/managed-by=toolgate -o json > "$OUT/snap-$k.json" 2>/dev/null || true; k=$((k+1)); sleep 3; done ) &
  snap_pid=$!
  operator_whole() {
    [ "$(kubectl -n $SYS get deploy toolgate -o jsonpath='{.status.readyReplicas}')" = "$(kubectl -n $SYS get deploy toolgate -o jsonpath='{.spec.replicas}')" ] &&
    ! kubectl -n $SYS get pods -l app.kubernetes.io/component=manager -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"\n"}{end}' | grep -q . &&
    kubectl -n $SYS get pod "$(kubectl -n $SYS get lease toolgate.dev -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1)" >/dev/null 2>&1
  }
  ( for k in $(seq 1 "$KILLS"); do
      sleep 5; until operator_whole; do sleep 1; done
      leader=$(kubectl -n $SYS get lease toolgate.dev -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1)
      if [ $((k % 2)) = 1 ]; then how=graceful; kubectl -n $SYS delete pod "$leader" --wait=false >/dev/null
      else how=forced; kubectl -n $SYS delete pod "$leader" --grace-period=0 --force --wait=false >/dev/null 2>&1; fi
      echo "fault $k: leader $leader deleted ($how) at +$(echo "$(date +%s.%N) - $created" | bc | cut -d. -f1) s"
    done ) &
  kill_pid=$!
fi
while :; do
  n=$(kubectl -n $NS get toolcalls -l burst=$SC -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -cE "Succeeded|Failed|Denied" || true)
  [ "$n" -ge 200 ] && break; sleep 2
done
done_at=$(date +%s.%N)
echo "all terminal after $(echo "$done_at - $created" | bc) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
kubectl -n $NS get toolcalls -l burst=$SC -o json > /tmp/burst-$SC.json
if [ -n "$kill_pid" ]; then
  wait "$kill_pid" || true
  kubectl -n $NS get jobs,pods -l app.kubernetes.io/managed-by=toolgate -o json > "$OUT/snap-final.json"
  kill "$snap_pid" 2>/dev/null || true
  python3 - /tmp/burst-$SC.json "$OUT" <<'P'
import json,sys,glob,collections
calls={c['metadata']['name']:c for c in json.load(open(sys.argv[1]))['items']}
jobs={}; pods={}
for f in sorted(glob.glob(sys.argv[2]+'/snap-*.json')):
    try: items=json.load(open(f))['items']
    except Exception: continue
    for o in items:
        call=o['metadata'].get('annotations',{}).get('toolgate.dev/call-name')
        if call not in calls: continue
        key=(call,o['metadata']['labels'].get('toolgate.dev/attempt'))
        if o['kind']=='Job': jobs.setdefault(key,set()).add(o['metadata']['uid'])
        else:
            started=any(cs['name']=='tool' and ('running' in cs['state'] or cs['state'].get('terminated',{}).get('startedAt')) for cs in o.get('status',{}).get('containerStatuses',[]))
            p=pods.setdefault(o['metadata']['uid'],[key,False]); p[1]=p[1] or started
starts=collections.Counter(k for k,s in pods.values() if s)
attempts=[(n,str(a['attempt'])) for n,c in calls.items() for a in c['status'].get('attempts',[])]
jc=collections.Counter(len(jobs.get(a,())) for a in attempts); sc=collections.Counter(starts.get(a,0) for a in attempts)
print("attempts %d (calls with more than one: %d)"%(len(attempts), sum(1 for c in calls.values() if len(c['status'].get('attempts',[]))>1)))
print("Jobs per attempt (count: attempts): %s; Jobs of no recorded attempt: %d"%(dict(sorted(jc.items())), sum(1 for k in jobs if k not in set(attempts))))
print("Pod starts per attempt (count: attempts): %s; Pods seen %d"%(dict(sorted(sc.items())), len(pods)))
P
fi
# shares(WHAT, [(time, requester)]): each requester's count at 25, 50 and 75 % of the 200 calls,
# against the mean (in % and in calls), and whether all stay within 10 % of it. Times are whole
# seconds (API timestamps): the calls of the second a checkpoint falls in count in proportion.
cat >"$OUT/shares.py" <<'P'
import collections
def count(events, k):
    cnt=collections.Counter(); bysec=collections.defaultdict(list)
    for t, r in events: bysec[t].append(r)
    left=k
    for t in sorted(bysec):
        rs=bysec[t]; f=min(1.0, left/len(rs))
        for r in rs: cnt[r]+=f
        left-=len(rs)*f
        if left<=0: break
    return cnt
def shares(what, events, n=200):
    out=[]; ok=True
    rs=sorted(set(r for _, r in events))
    for frac in (0.25, 0.5, 0.75):
        k=int(n*frac); cnt=count(events, k); mean=k/4
        dev=[(cnt[r]-mean)/mean*100 for r in rs]
        ok=ok and len(events)>=k and all(abs(d)<=10 for d in dev)
        out.append("first %d %s by requester: %s, %+.0f%% .. %+.0f%% of the mean %.1f (10%%: +/-%.2f calls)"%(
            k, what, " / ".join("%s %.1f"%(r,cnt[r]) for r in rs), min(dev), max(dev), mean, mean*0.1))
    out.append("%s shares within 10%% of the mean at 25/50/75%%: %s"%(what, "yes" if ok else "no"))
    return "\n".join(out)
P
PYTHONPATH=$OUT python3 - /tmp/burst-$SC.json <<'P'
import json,sys,datetime,collections
from shares import shares
d=json.load(open(sys.argv[1]))
ph=collections.Counter(); ends=[]
def t(s): return datetime.datetime.fromisoformat(s.replace('Z','+00:00')).timestamp()
for c in d['items']:
    r=c['status'].get('result',{}).get('reason'); ph[(c['status']['phase'],r)]+=1
    ends.append((t(c['status']['completionTime'])-t(c['metadata']['creationTimestamp']), c['metadata']['labels']['requester'], t(c['status']['completionTime'])))
print(dict(ph))
lat=sorted(e[0] for e in ends); print("time to result p50 %.0fs p95 %.0fs max %.0fs"%(lat[len(lat)//2], lat[int(len(lat)*.95)], lat[-1]))
ends.sort(key=lambda e:e[2])
print(shares("done", [(e[2], e[1]) for e in ends]))
P
# Issue 34 item 4: how much of the tool's timeout sandbox start-up takes once admitted: the
# Job's Resumed event (activeDeadlineSeconds counts from then) to the kubelet's Started event of
# the tool container, whole seconds; events, not the Pods, so that Pods the Job controller
# deleted at their deadline count too. And how many Jobs still ran into activeDeadlineSeconds.
kubectl -n $NS get events -o json > "$OUT/events.json"
PYTHONPATH=$OUT python3 - /tmp/burst-$SC.json "$OUT/events.json" <<'P'
import json,sys,datetime,collections
from shares import shares
who={c['metadata']['name']:c['metadata']['labels']['requester'] for c in json.load(open(sys.argv[1]))['items']}
calls=set(who)
def t(s): return datetime.datetime.fromisoformat(s.replace('Z','+00:00')).timestamp()
resumed={}; started={}; deadline=set(); pods={}
for e in json.load(open(sys.argv[2]))['items']:
    o=e['involvedObject']; ts=e.get('lastTimestamp') or e['metadata']['creationTimestamp']
    job=o['name'] if o['kind']=='Job' else o['name'].rsplit('-',1)[0]
    if job.rsplit('-',1)[0] not in calls: continue
    if o['kind']=='Job' and e['reason']=='Resumed': resumed[job]=min(t(ts), resumed.get(job, t(ts)))
    if o['kind']=='Job' and e['reason']=='DeadlineExceeded': deadline.add(job)
    if o['kind']=='Pod' and e['reason']=='Started' and (o.get('fieldPath') or '').endswith('{tool}'):
        started[job]=t(ts); pods.setdefault(job,set()).add(o['name'])
# Admission order: each Job's first Resumed event (Kueue admitted it).
print(shares("admitted", [(t0, who[j.rsplit('-',1)[0]]) for j, t0 in resumed.items()]))
d=sorted(started[j]-resumed[j] for j in started if j in resumed)
def q(f): return d[min(len(d)-1,int(len(d)*f))]
if d:
    print("Job resumed -> tool container started (events) p50 %.0fs p95 %.0fs max %.0fs over %d Jobs (the tool's timeout is 10s); Jobs that ran into activeDeadlineSeconds: %d"%(q(.5),q(.95),d[-1],len(d),len(deadline)))
    print("Pods whose tool container started, per Job (events; count: Jobs): %s"%dict(collections.Counter(len(pods.get(j,())) for j in resumed)))
P
kubectl delete toolscope,tool -n $NS -l toolgate.dev/bench-burst=true >/dev/null
if [ "$QUEUES" -gt 1 ]; then
  for g in $(seq 1 "$QUEUES"); do
    kubectl -n $NS delete localqueue "$(scope_of "$g")" >/dev/null
    kubectl delete clusterqueue "$(scope_of "$g")" --wait=false >/dev/null
  done
fi
