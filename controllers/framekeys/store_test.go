package framekeys

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

var testMasterText, _ = frame.NewKey()

// secretOf is the frame key Secret of namespace "ns": master, and a previous one.
func secretOf(master string, previous ...string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: podcontract.FrameKeySecret, Namespace: "ns"},
		Data: map[string][]byte{podcontract.FrameKeySecretKey: []byte(master)}}
	if len(previous) > 0 {
		s.Data[podcontract.FrameKeySecretPrevious] = []byte(previous[0])
	}
	return s
}

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
	keys := New(c, c, clock)
	first, err := keys.Ensure(context.Background(), "ns")
	if err != nil || len(first) != 1 || len(first[0]) != frame.KeySize {
		t.Fatalf("masters %v, %v", first, err)
	}
	for range 10 {
		if _, err := keys.Ensure(context.Background(), "ns"); err != nil {
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
	clock.Step(TTL)
	if _, err := keys.Ensure(context.Background(), "ns"); err != nil || *gets != 3 || *creates != 1 {
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
		s := secretOf(testMasterText)
		s.Data = data
		c, _, creates := countingClient(t, s)
		_, err := New(c, c, nil).Ensure(context.Background(), "ns")
		if !errors.Is(err, ErrSecret) || *creates != 0 {
			t.Errorf("%s: %v, %d creates", name, err, *creates)
		}
	}
}

// A rotation (key moved to previous, a new key written) is not seen from memory within the
// TTL, and is at once by Refresh (what a frame that does not verify with the cached masters
// asks for): both masters, the new one first.
func TestFrameKeysRefreshSeesRotation(t *testing.T) {
	c, gets, _ := countingClient(t, secretOf(testMasterText))
	keys := New(c, c, nil)
	old, err := keys.Ensure(context.Background(), "ns")
	if err != nil || len(old) != 1 {
		t.Fatalf("masters %v, %v", old, err)
	}
	newText, _ := frame.NewKey()
	newMaster, _ := frame.ParseKey(newText)
	if err := c.Update(context.Background(), secretOf(newText, testMasterText)); err != nil {
		t.Fatal(err)
	}
	if cached, err := keys.Ensure(context.Background(), "ns"); err != nil || len(cached) != 1 {
		t.Fatalf("from memory: %d masters, %v; want the one cached", len(cached), err)
	}
	fresh, err := keys.Refresh(context.Background(), "ns")
	if err != nil || len(fresh) != 2 || string(fresh[0]) != string(newMaster) || string(fresh[1]) != string(old[0]) {
		t.Fatalf("refreshed: %d masters, %v; want the new one, then the old one", len(fresh), err)
	}
	if *gets != 2 {
		t.Errorf("%d reads of the Secret, want 2 (the first, and once after the rotation)", *gets)
	}
}
