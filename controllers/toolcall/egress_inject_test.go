package toolcall

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant/egressgranttest"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

var withInjection = egressgranttest.WithInjection

// The grant the operator signs carries the injections (egressgrant); the Pod carries none
// of the values: the body gets the CA to trust (and the link volume for the bundle), the
// signer a reference to each value to redact.
func TestEgressInjectJob(t *testing.T) {
	in := testJobInput(withInjection)
	in.EgressCA, in.EgressProxyURL = "-----BEGIN CERTIFICATE-----\n", "http://call:g@10.0.0.50:3128"
	spec := podspec.BuildJob(in, podspec.DefaultOptions()).Spec.Template.Spec
	tool, signer := toolIn(spec), signerOf(&spec)
	if v := envValue(tool.Env, podcontract.EnvEgressCA); v != in.EgressCA {
		t.Errorf("%s = %q, want the CA", podcontract.EnvEgressCA, v)
	}
	if !hasMount(tool.VolumeMounts, podcontract.LinkVolume) {
		t.Error("the body's container does not mount the link volume, where the CA bundle goes")
	}
	for _, e := range tool.Env {
		if e.ValueFrom != nil {
			t.Errorf("the body's container gets %s from a Secret", e.Name)
		}
	}
	want := []corev1.EnvVar{
		{Name: podcontract.EnvRedactEgressPrefix + "0", ValueFrom: secretKeyRef(toolgatev1alpha1.CredentialKeySelector{Name: "api", Key: "token"})},
		{Name: podcontract.EnvRedactEgressPrefix + "1", ValueFrom: secretKeyRef(toolgatev1alpha1.CredentialKeySelector{Name: "api", Key: "key"})},
	}
	var got []corev1.EnvVar
	for _, e := range signer.Env {
		if strings.HasPrefix(e.Name, podcontract.EnvRedactEgressPrefix) {
			got = append(got, e)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("signer's redaction references (-want +got):\n%s", diff)
	}
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func hasMount(mounts []corev1.VolumeMount, volume string) bool {
	for _, m := range mounts {
		if m.Name == volume {
			return true
		}
	}
	return false
}
