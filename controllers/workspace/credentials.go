package workspace

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/pkg/catalog"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Credentials a session's files may hold: a body given credentials that mounts its
// session's workspace ReadWrite may write a value into a file or a file name, which a later
// call of the session (read_file, list) would return in clear. So the claim records the
// Secret keys of every such call's credentials (AnnotationWorkspaceCredentials) before its
// Job exists, and every Pod that mounts the claim, whatever its tool, redacts their values:
// its signer gets them (EnvRedactPrefix), its body nothing.

// workspaceCredentials are the Secret keys an attempt adds to its session's record: its
// tool's credentials when it mounts the workspace ReadWrite; none for ReadOnly (it cannot
// write them there). Sorted, without duplicates.
func workspaceCredentials(spec *v1alpha1.ToolSpec) []podcontract.WorkspaceCredential {
	if Access(spec) != v1alpha1.WorkspaceReadWrite {
		return nil
	}
	var refs []podcontract.WorkspaceCredential
	for _, c := range catalog.Credentials(spec.Body) {
		refs = append(refs, podcontract.WorkspaceCredential{Secret: c.Secret, Key: c.Key})
	}
	return mergeCredentials(nil, refs)
}

// snapshotSpec is the tool spec the call was admitted with (nil: not resolved).
func snapshotSpec(call *v1alpha1.ToolCall) *v1alpha1.ToolSpec {
	if call.Status.Tool == nil {
		return nil
	}
	return call.Status.Tool.Spec
}

// mergeCredentials is the union of a and b, sorted, without duplicates.
func mergeCredentials(a, b []podcontract.WorkspaceCredential) []podcontract.WorkspaceCredential {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, func(x, y podcontract.WorkspaceCredential) int {
		return cmp.Or(strings.Compare(x.Secret, y.Secret), strings.Compare(x.Key, y.Key))
	})
	return slices.Compact(out)
}

// encodeCredentials is the annotation's value for refs.
func encodeCredentials(refs []podcontract.WorkspaceCredential) string {
	b, _ := json.Marshal(refs) // two strings per entry always encode
	return string(b)
}

// recordedCredentials reads a claim's record (absent: none). A record the operator would
// not have written (not JSON, unsorted, repeated, over the bound, a name that is no Secret
// name or key) is an error: whoever altered it, its calls cannot know what to redact.
func recordedCredentials(pvc *corev1.PersistentVolumeClaim) ([]podcontract.WorkspaceCredential, error) {
	raw, ok := pvc.Annotations[podcontract.AnnotationWorkspaceCredentials]
	if !ok {
		return nil, nil
	}
	var refs []podcontract.WorkspaceCredential
	if err := json.Unmarshal([]byte(raw), &refs); err != nil {
		return nil, fmt.Errorf("not a JSON list of {secret, key}: %w", err)
	}
	if len(refs) > podcontract.MaxWorkspaceCredentials {
		return nil, fmt.Errorf("%d entries, over the limit of %d", len(refs), podcontract.MaxWorkspaceCredentials)
	}
	if !slices.Equal(refs, mergeCredentials(nil, refs)) {
		return nil, errors.New("not sorted, or with duplicates")
	}
	for _, r := range refs {
		if len(validation.IsDNS1123Subdomain(r.Secret)) > 0 || len(validation.IsConfigMapKey(r.Key)) > 0 {
			return nil, fmt.Errorf("%q/%q is no Secret name and key", r.Secret, r.Key)
		}
	}
	return refs, nil
}

// credentialsRefusal ends a call whose session cannot record, or no longer reads, what its
// Pods must redact.
func credentialsRefusal(detail string) executor.Step {
	msg := "the call was not run: its session workspace cannot record the credentials its tools were given"
	return workspaceRefusal(v1alpha1.ReasonWorkspaceCredentialsUnrecorded, detail, msg)
}

// claimCredentials records on the session's claim (read from the API server) the
// credentials the call's attempt adds, in one patch and only when the set grows, and
// returns the whole record, which the attempt's Pod redacts. A record that would grow past
// MaxWorkspaceCredentials refuses the call rather than run a body whose values later calls
// could not redact; so does a record the operator did not write. Not ok: st or err is what
// this pass comes to (a conflict is retried through the queue).
func (c *Claims) claimCredentials(ctx context.Context, call *v1alpha1.ToolCall, pvc *corev1.PersistentVolumeClaim) ([]podcontract.WorkspaceCredential, executor.Step, bool, error) {
	recorded, err := recordedCredentials(pvc)
	if err != nil {
		detail := "the " + podcontract.AnnotationWorkspaceCredentials + " annotation of the PersistentVolumeClaim " + pvc.Name + " is not the operator's record: " + err.Error()
		return nil, credentialsRefusal(detail), false, nil
	}
	all := mergeCredentials(recorded, workspaceCredentials(snapshotSpec(call)))
	if len(all) == len(recorded) {
		return recorded, executor.Step{}, true, nil
	}
	if len(all) > podcontract.MaxWorkspaceCredentials {
		detail := "the session's PersistentVolumeClaim " + pvc.Name + " would record " + strconv.Itoa(len(all)) +
			" credentials (Secret keys) with this tool's, over the limit of " + strconv.Itoa(podcontract.MaxWorkspaceCredentials)
		return nil, credentialsRefusal(detail), false, nil
	}
	patch := client.MergeFromWithOptions(pvc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, podcontract.AnnotationWorkspaceCredentials, encodeCredentials(all))
	if err := c.Client.Patch(ctx, pvc, patch); err != nil {
		return nil, executor.Step{}, false, err
	}
	ctrl.LoggerFrom(ctx).Info("recorded credentials on the session workspace", "claim", pvc.Name, "credentials", len(all))
	return all, executor.Step{}, true, nil
}
