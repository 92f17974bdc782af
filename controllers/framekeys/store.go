// Package framekeys is the store of each namespace's frame masters: the frame key Secret
// (podcontract.FrameKeySecret) the operator creates in a namespace before its first tool
// Pod, reads with the API reader and keeps in memory for TTL. Every attempt's frame is
// signed with a key derived from these masters (frame.AttemptKey), and warm Pods
// authenticate their handover with the handover keys published beside them.
package framekeys

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;update,resourceNames=toolgate-frame-key
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;delete

// TTL is how long a namespace's masters are used from memory before they are read
// again: a rotation or a Secret deleted and re-created is seen within it (and at once when
// a frame does not verify). One GET per namespace per TTL, never one per call.
const TTL = 5 * time.Minute

// ErrSecret is a frame key Secret the operator cannot use (malformed, or forbidden): a call
// that needs it ends OperatorError rather than being retried.
var ErrSecret = errors.New("the namespace's frame key Secret " + podcontract.FrameKeySecret + " cannot be used")

// Store holds each namespace's frame masters (podcontract.FrameKeySecret), read with the
// API reader (no Secret informer: the operator may get only that one Secret by name) and
// created when missing. Tool containers read the Secret by secretKeyRef; no key ever
// appears in a Job or Pod spec.
type Store struct {
	client client.Client
	reader client.Reader
	clock  clock.PassiveClock

	mu   sync.Mutex
	byNS map[string]nsMasters
}

type nsMasters struct {
	// masters are the current key, then the previous one if the Secret has one.
	masters [][]byte
	readAt  time.Time
}

// New is the store that writes with c and reads the Secrets with r (the API reader); clk
// nil: the real clock.
func New(c client.Client, r client.Reader, clk clock.PassiveClock) *Store {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Store{client: c, reader: r, clock: clk, byNS: map[string]nsMasters{}}
}

// Ensure returns the namespace's masters (current first), from memory when read within
// TTL, else from the Secret, which it creates when it does not exist.
func (k *Store) Ensure(ctx context.Context, namespace string) ([][]byte, error) {
	k.mu.Lock()
	cached, ok := k.byNS[namespace]
	k.mu.Unlock()
	if ok && k.clock.Since(cached.readAt) < TTL {
		return cached.masters, nil
	}
	return k.read(ctx, namespace)
}

// Refresh reads the namespace's masters again (a frame that did not verify: the key may
// have been rotated since it was cached).
func (k *Store) Refresh(ctx context.Context, namespace string) ([][]byte, error) {
	return k.read(ctx, namespace)
}

func (k *Store) read(ctx context.Context, namespace string) ([][]byte, error) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: namespace, Name: podcontract.FrameKeySecret}
	err := k.reader.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		secret, err = k.create(ctx, namespace)
	}
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("%w: %w", ErrSecret, err)
	}
	if err != nil {
		return nil, err
	}
	masters, err := mastersOf(secret)
	if err != nil {
		return nil, err
	}
	if err := k.publishHandoverKeys(ctx, secret, masters); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.byNS[namespace] = nsMasters{masters: masters, readAt: k.clock.Now()}
	k.mu.Unlock()
	return masters, nil
}

// publishHandoverKeys writes the masters' handover public keys into the Secret when it
// lacks them or they are not the masters' (a Secret made before them, or rotated by hand):
// warm Pods read them from there.
func (k *Store) publishHandoverKeys(ctx context.Context, secret *corev1.Secret, masters [][]byte) error {
	want := HandoverKeys(masters)
	if bytes.Equal(secret.Data[podcontract.FrameKeySecretHandover], want) {
		return nil
	}
	secret.Data[podcontract.FrameKeySecretHandover] = want
	if err := k.client.Update(ctx, secret); err != nil {
		return fmt.Errorf("publishing the handover keys in %s: %w", podcontract.FrameKeySecret, err)
	}
	return nil
}

// create makes the namespace's Secret with a fresh key; one created meanwhile (another
// replica, a restart) is read instead.
func (k *Store) create(ctx context.Context, namespace string) (*corev1.Secret, error) {
	master, err := frame.NewKey()
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: podcontract.FrameKeySecret, Namespace: namespace,
			Labels: map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{podcontract.FrameKeySecretKey: []byte(master)},
	}
	if m, err := frame.ParseKey(master); err == nil {
		secret.Data[podcontract.FrameKeySecretHandover] = HandoverKeys([][]byte{m})
	}
	err = k.client.Create(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		err = k.reader.Get(ctx, client.ObjectKeyFromObject(secret), secret)
	}
	return secret, err
}

// mastersOf parses the Secret's key and, when present, previous.
func mastersOf(secret *corev1.Secret) ([][]byte, error) {
	var masters [][]byte
	for _, name := range []string{podcontract.FrameKeySecretKey, podcontract.FrameKeySecretPrevious} {
		v, ok := secret.Data[name]
		if !ok && name == podcontract.FrameKeySecretPrevious {
			continue
		}
		m, err := frame.ParseKey(string(v))
		if err != nil {
			return nil, fmt.Errorf("%w: data %q: %w", ErrSecret, name, err)
		}
		masters = append(masters, m)
	}
	return masters, nil
}

// AttemptKeys are the keys one attempt's frame may be signed with: the attempt's key
// derived from each master.
func AttemptKeys(masters [][]byte, callUID types.UID, attempt int) [][]byte {
	keys := make([][]byte, 0, len(masters))
	for _, m := range masters {
		keys = append(keys, frame.AttemptKey(m, string(callUID), attempt))
	}
	return keys
}

// HandoverKeys is the Secret's FrameKeySecretHandover value for masters: each master's
// handover public key, which warm Pods verify the handover with.
func HandoverKeys(masters [][]byte) []byte {
	keys := make([]ed25519.PublicKey, 0, len(masters))
	for _, m := range masters {
		keys = append(keys, frame.HandoverPublicKey(m))
	}
	return []byte(frame.EncodePublicKeys(keys))
}
