package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// startEnv starts envtest with the API server's concurrency limits from the options.
func startEnv(o options) (*toolgatetest.Env, error) {
	flags := map[string]string{}
	if o.maxInflight > 0 {
		flags["max-requests-inflight"] = strconv.Itoa(o.maxInflight)
	}
	if o.maxMutating > 0 {
		flags["max-mutating-requests-inflight"] = strconv.Itoa(o.maxMutating)
	}
	return toolgatetest.Start(toolgatetest.Options{APIServerFlags: flags, SetupTimeout: time.Minute})
}

// apfObjects renders the chart's flowcontrol template with helm (release toolgate in
// toolgate-system, as installed by make up), or takes the embedded config/flowcontrol.
func apfObjects(o options, cfg *rest.Config) ([]client.Object, string, error) {
	if o.helm == "" {
		objs, err := toolgatetest.FlowControlObjects()
		return objs, "config/flowcontrol (embedded)", err
	}
	root, err := toolgatetest.ModuleRoot()
	if err != nil {
		return nil, "", err
	}
	helm := o.helm
	if !filepath.IsAbs(helm) {
		helm = filepath.Join(root, helm)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	version, err := dc.ServerVersion()
	if err != nil {
		return nil, "", err
	}
	args := []string{"template", "toolgate", filepath.Join(root, "charts", "toolgate"), "-n", "toolgate-system",
		"--kube-version", version.GitVersion, "--show-only", "templates/flowcontrol.yaml"}
	if o.apfSet != "" {
		args = append(args, "--set", o.apfSet)
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("%s %s: %w: %s (make helm builds bin/helm)", helm, strings.Join(args, " "), err, stderr.String())
	}
	objs, err := toolgatetest.DecodeFlowControl(out.Bytes())
	return objs, "helm " + strings.Join(args, " "), err
}

// operatorSubject is the ServiceAccount the rendered operator FlowSchema matches.
func operatorSubject(objs []client.Object) (namespace, name string, err error) {
	for _, obj := range objs {
		fs, ok := obj.(*flowcontrolv1.FlowSchema)
		if !ok || !strings.HasSuffix(fs.Name, "-operator") {
			continue
		}
		for _, r := range fs.Spec.Rules {
			for _, s := range r.Subjects {
				if s.ServiceAccount != nil {
					return s.ServiceAccount.Namespace, s.ServiceAccount.Name, nil
				}
			}
		}
	}
	return "", "", fmt.Errorf("no operator FlowSchema with a ServiceAccount subject in the rendering")
}

// applyAPF creates the objects (fresh copies: a deleted object's uid and resourceVersion
// must not be sent again).
func applyAPF(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, obj := range objs {
		fresh := obj.DeepCopyObject().(client.Object)
		if err := c.Create(ctx, fresh); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// removeAPF deletes the objects (schemas first).
func removeAPF(ctx context.Context, c client.Client, objs []client.Object) error {
	for i := len(objs) - 1; i >= 0; i-- {
		if err := c.Delete(ctx, objs[i].DeepCopyObject().(client.Object)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// levelNames maps the UIDs of every FlowSchema and priority level to their names.
func levelNames(ctx context.Context, c client.Client) (map[string]string, error) {
	names := map[string]string{}
	var schemas flowcontrolv1.FlowSchemaList
	var levels flowcontrolv1.PriorityLevelConfigurationList
	if err := c.List(ctx, &schemas); err != nil {
		return nil, err
	}
	if err := c.List(ctx, &levels); err != nil {
		return nil, err
	}
	for _, s := range schemas.Items {
		names[string(s.UID)] = s.Name
	}
	for _, l := range levels.Items {
		names[string(l.UID)] = l.Name
	}
	return names, nil
}

// waitClassified polls probe until the API server classifies it into the flow schema
// wantSchema (kube-apiserver applies flowcontrol objects asynchronously).
func waitClassified(ctx context.Context, admin client.Client, rec *toolgatetest.PFRecorder, probe func(context.Context) error, wantSchema string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := probe(ctx); err != nil {
			return err
		}
		names, err := levelNames(ctx, admin)
		if err != nil {
			return err
		}
		got := names[string(rec.Last().FlowSchemaUID)]
		if got == wantSchema {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator's requests are classified by FlowSchema %q, not %q, after 30s", got, wantSchema)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
