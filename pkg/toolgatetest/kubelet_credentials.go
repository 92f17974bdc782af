package toolgatetest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// credentialOutcome plays the kubelet's refusal to create a container whose credential (a body.env valueFrom, or a secret file's TOOLGATE_SECRET_FILE_<i> reference)
// names a Secret or key that does not exist: the container waits with
// CreateContainerConfigError and the kubelet's own message. An optional reference (a
// workspace's recorded credential, TOOLGATE_REDACT_<i>) is never refused, and other
// references (the frame key) keep containerEnv's behaviour: a missing one is left unset.
// The kit does not play the runner's redaction or the secret files' contents.
func (k *Kubelet) credentialOutcome(ctx context.Context, job *batchv1.Job, o Outcome) (Outcome, error) {
	c := signerSpec(&job.Spec.Template.Spec)
	var named []string
	for _, e := range c.Env {
		if e.Name == podcontract.EnvSecretEnv {
			named = strings.Split(e.Value, ",")
		}
	}
	for _, e := range c.Env {
		credential := slices.Contains(named, e.Name) || strings.HasPrefix(e.Name, podcontract.EnvSecretFilePrefix)
		if !credential || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || ptr.Deref(e.ValueFrom.SecretKeyRef.Optional, false) {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		secret := &corev1.Secret{}
		err := k.reader().Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: ref.Name}, secret)
		switch {
		case apierrors.IsNotFound(err):
			return missingCredential(fmt.Sprintf("secret %q not found", ref.Name)), nil
		case err != nil:
			return o, fmt.Errorf("simulated kubelet: secret %s for %s: %w", ref.Name, e.Name, err)
		}
		if _, ok := secret.Data[ref.Key]; !ok {
			return missingCredential(fmt.Sprintf("couldn't find key %s in Secret %s/%s", ref.Key, job.Namespace, ref.Name)), nil
		}
	}
	return o, nil
}

func missingCredential(msg string) Outcome {
	return Outcome{Waiting: "CreateContainerConfigError", WaitingMessage: msg}
}
