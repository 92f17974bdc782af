package toolgatetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Session sandboxes in envtest: the Kubelet starts a session Pod as a pool Pod (Running,
// Ready, with an address) and is the operator's session transport (sessionTransport, in
// place of the mutual-TLS connection): it serves many Handovers per Pod, one at a time,
// each checked as the session runner checks it — its auth must verify with a master of the
// namespace's frame key Secret for this Pod (frame.VerifyHandover) and its call and
// attempt must be new to the Pod, else an unsigned HandoverRefused reply and the session
// ends (the Pod fails) — then plays the tool's script for the Handover's attempt as a cold
// Pod's: the digest check, the frame signed with the Handover's key, the reply (a large
// frame's log block, then its result line). The Pod keeps running after a reply, but for
// the outcomes that end a session: DeadlineExceeded, Evicted, PodReason and NoFrame fail
// the Pod, and the reply never comes (the connection breaks after the handover). Each
// Handover is recorded (Kubelet.SessionHandovers). Outcome.After delays the reply; Hold,
// LosePod and Waiting are cold-only.

// SessionHandover is one Handover a session Pod received.
type SessionHandover struct {
	Namespace, Pod string
	PodUID         types.UID
	CallUID        types.UID
	Attempt        int
	At             time.Time
	// Refused: the Handover's auth did not verify, or its attempt ran in this Pod already;
	// the body did not run and the session ended.
	Refused bool
}

// SessionHandovers returns every Handover the Kubelet's session Pods received, in order.
func (k *Kubelet) SessionHandovers() []SessionHandover {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]SessionHandover(nil), k.sessionCalls...)
}

// errSessionLost is a session Pod's connection breaking after the handover: the Pod ended.
var errSessionLost = errors.New("simulated: the session Pod's connection broke")

// sessionTransport is the Kubelet as the operator's controllers.SessionTransport.
type sessionTransport struct{ k *Kubelet }

func (t sessionTransport) Call(ctx context.Context, pod *corev1.Pod, line []byte) (controllers.SessionReply, error) {
	return t.k.sessionCall(ctx, pod, line)
}

func (t sessionTransport) Forget(types.UID) {}

// sessionLock is the Pod's turn: one call at a time, as its runner serves them.
func (k *Kubelet) sessionLock(uid types.UID) *sync.Mutex {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sessionTurns == nil {
		k.sessionTurns = map[types.UID]*sync.Mutex{}
	}
	m, ok := k.sessionTurns[uid]
	if !ok {
		m = &sync.Mutex{}
		k.sessionTurns[uid] = m
	}
	return m
}

func (k *Kubelet) sessionCall(ctx context.Context, p *corev1.Pod, line []byte) (controllers.SessionReply, error) {
	turn := k.sessionLock(p.UID)
	turn.Lock()
	defer turn.Unlock()
	pod := &corev1.Pod{}
	if err := k.reader().Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, pod); err != nil {
		return controllers.SessionReply{}, err
	}
	if pod.UID != p.UID || !pod.DeletionTimestamp.IsZero() || pod.Status.Phase != corev1.PodRunning {
		return controllers.SessionReply{}, fmt.Errorf("simulated: session Pod %s does not listen", p.Name)
	}
	h, err := frame.ReadHandover(bytesReader(line))
	if err != nil {
		return controllers.SessionReply{}, err
	}
	env, err := k.containerEnv(ctx, pod)
	if err != nil {
		return controllers.SessionReply{}, err
	}
	keys, _ := frame.ParsePublicKeys(env[podcontract.EnvHandoverKeys])
	at := time.Now()
	rec := SessionHandover{Namespace: pod.Namespace, Pod: pod.Name, PodUID: pod.UID, CallUID: types.UID(h.CallUID), Attempt: h.Attempt, At: at}
	rec.Refused = !frame.VerifyHandover(keys, env[podcontract.EnvPodUID], h) || k.sessionRan(pod.UID, h) || frame.CheckSession(h) != nil
	k.mu.Lock()
	k.sessionCalls = append(k.sessionCalls, rec)
	k.mu.Unlock()
	reply := controllers.SessionReply{HandedOver: at}
	if rec.Refused {
		term, err := k.refuseHandover(ctx, pod)
		if term != nil {
			reply.Bytes = frame.ResultLine([]byte(term.Message))
		}
		return reply, err
	}
	o := k.sessionWorkspaceOutcome(pod, h.Arguments, k.toolScript(pod.Annotations[podcontract.AnnotationTool], h.Attempt))
	k.noteSIGTERM(pod, o)
	if o.After > 0 {
		select {
		case <-time.After(o.After):
		case <-ctx.Done():
			return reply, ctx.Err()
		}
	}
	if o.DeadlineExceeded || o.Evicted || o.PodReason != "" || o.NoFrame {
		if _, err := k.playWarm(ctx, pod, Outcome{DeadlineExceeded: o.DeadlineExceeded, Evicted: o.Evicted, PodReason: firstOf(o.PodReason, "Error")}, h, h.AttemptKey); err != nil {
			return reply, err
		}
		return reply, errSessionLost
	}
	env[podcontract.EnvArgsDigest] = h.ArgumentsDigest
	term, err := k.terminateWith(pod, o, env, h.Arguments, h.AttemptKey)
	if err != nil {
		return reply, err
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	k.mu.Lock()
	block := k.logs[key]
	delete(k.logs, key)
	k.mu.Unlock()
	reply.Bytes = append(append([]byte(nil), block...), frame.ResultLine([]byte(term.Message))...)
	return reply, nil
}

// sessionRan records h's call and attempt as run in the Pod: true when it was already.
func (k *Kubelet) sessionRan(pod types.UID, h frame.Handover) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sessionSeen == nil {
		k.sessionSeen = map[types.UID]map[string]bool{}
	}
	if k.sessionSeen[pod] == nil {
		k.sessionSeen[pod] = map[string]bool{}
	}
	id := fmt.Sprintf("%s/%d", h.CallUID, h.Attempt)
	seen := k.sessionSeen[pod][id]
	k.sessionSeen[pod][id] = true
	return seen
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// simulatedPodIP is an address for a Pod the Kubelet starts (10.x.y.z from its uid).
func simulatedPodIP(uid types.UID) string {
	var h uint32 = 2166136261
	for i := 0; i < len(uid); i++ {
		h = (h ^ uint32(uid[i])) * 16777619
	}
	return fmt.Sprintf("10.%d.%d.%d", byte(h>>16), byte(h>>8), max(byte(h), 1))
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
