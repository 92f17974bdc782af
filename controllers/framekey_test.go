package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// countingClient is a fake cluster that counts the Secret reads and creates.
func countingClient(t *testing.T, objs ...client.Object) (client.Client, *int, *int) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	gets, creates := new(int), new(int)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				*gets++
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				*creates++
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	return c, gets, creates
}

// A namespace without a frame key Secret gets one (a fresh master, never in any Pod or Job
// spec), once; afterwards the operator uses it from memory: no read or write per call.
func TestFrameKeysCreatedOnceAndCached(t *testing.T) {
	c, gets, creates := countingClient(t)
	clock := clocktesting.NewFakeClock(time.Now())
	keys := newFrameKeys(c, c, clock)
	first, err := keys.ensure(context.Background(), "ns")
	if err != nil || len(first) != 1 || len(first[0]) != frame.KeySize {
		t.Fatalf("masters %v, %v", first, err)
	}
	for range 10 {
		if _, err := keys.ensure(context.Background(), "ns"); err != nil {
			t.Fatal(err)
		}
	}
	if *creates != 1 || *gets != 1 {
		t.Fatalf("%d creates and %d reads for 11 calls in one namespace, want 1 and 1", *creates, *gets)
	}
	secret := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: podcontract.FrameKeySecret}, secret); err != nil {
		t.Fatal(err)
	}
	if m, err := frame.ParseKey(string(secret.Data[podcontract.FrameKeySecretKey])); err != nil || string(m) != string(first[0]) {
		t.Fatalf("the Secret's key %v is not the master in use", err)
	}
	clock.Step(frameKeyTTL)
	if _, err := keys.ensure(context.Background(), "ns"); err != nil || *gets != 3 || *creates != 1 {
		t.Fatalf("after the TTL: %v, %d reads (one is the test's own), %d creates; want it read again", err, *gets, *creates)
	}
}

// A Secret the operator cannot use is a clear error (the call ends OperatorError), never a
// key made up in its place.
func TestFrameKeysMalformedSecret(t *testing.T) {
	for name, data := range map[string]map[string][]byte{
		"no key":       {},
		"short key":    {podcontract.FrameKeySecretKey: []byte("c2hvcnQ")},
		"bad previous": {podcontract.FrameKeySecretKey: []byte(testMasterText), podcontract.FrameKeySecretPrevious: []byte("x")},
	} {
		s := frameKeySecret(testMasterText)
		s.Data = data
		c, _, creates := countingClient(t, s)
		_, err := newFrameKeys(c, c, nil).ensure(context.Background(), "ns")
		if !errors.Is(err, errFrameKeySecret) || *creates != 0 {
			t.Errorf("%s: %v, %d creates", name, err, *creates)
		}
	}
}

// A rotation (key moved to previous, a new key written) is seen at the first frame that
// does not verify with the cached masters: frames of Pods started before it (the old master)
// and after it (the new one) both verify; a frame of neither still does not.
func TestFrameKeysRotation(t *testing.T) {
	c, gets, _ := countingClient(t, frameKeySecret(testMasterText))
	env := execEnv{keys: newFrameKeys(c, c, nil)}
	w := newExecWorld(ending{})
	if _, err := env.keys.ensure(context.Background(), "ns"); err != nil {
		t.Fatal(err)
	}
	newText, _ := frame.NewKey()
	newMaster, _ := frame.ParseKey(newText)
	rotated := frameKeySecret(newText, testMasterText)
	if err := c.Update(context.Background(), rotated); err != nil {
		t.Fatal(err)
	}
	trust := env.trust(w.call)
	for name, key := range map[string][]byte{"old master": testAttemptKey, "new master": frame.AttemptKey(newMaster, string(testCallUID), 1)} {
		msg, _ := encodeFrame(key, stdoutFrame(0, "hello"))
		if _, _, _, err := trust.termination(context.Background(), msg); err != nil {
			t.Errorf("a frame signed with the %s: %v", name, err)
		}
	}
	if *gets != 2 {
		t.Errorf("%d reads of the Secret, want 2 (the first, and once after the rotation)", *gets)
	}
	msg, _ := encodeFrame(frame.AttemptKey(otherMaster, string(testCallUID), 1), stdoutFrame(0, "FORGED"))
	if _, _, _, err := trust.termination(context.Background(), msg); !errors.Is(err, frame.ErrSignature) {
		t.Errorf("a frame of another master: %v", err)
	}
}
