/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package toolgatetest is toolgate's test kit: a kube-apiserver (envtest) with toolgate's CRDs
// and admission policies installed, builders for every kind, and gomega matchers.
// Other teams' integration suites import it instead of wiring envtest themselves.
package toolgatetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

const (
	// ModulePath is toolgate's Go module; Start looks for its go.mod to find bin/k8s.
	ModulePath = "github.com/toolgate/toolgate"

	// AdminUser is the user name of Env.Client (envtest's admin, in system:masters). The
	// builders default requester and approver to it so that Env.Client passes the identity policy.
	AdminUser = "admin"

	// EditorsGroup is a group Start binds to a ClusterRole granting every verb on every
	// toolgate.dev resource: AddUser("alice", []string{EditorsGroup}) can create ToolCalls.
	EditorsGroup = "toolgatetest:editors"

	// editorsRole is the ClusterRole (and ClusterRoleBinding) behind EditorsGroup.
	editorsRole = "toolgatetest:toolgate-editor"
)

// Options configure Start. The zero value is what most suites want.
type Options struct {
	// BinaryAssetsDirectory holds kube-apiserver, etcd and kubectl. Default: $KUBEBUILDER_ASSETS,
	// else bin/k8s under the toolgate module root (found by walking up from the working
	// directory to the go.mod of ModulePath, then next to this source file); build it with
	// `make envtest-binaries`.
	BinaryAssetsDirectory string

	// Scheme for Env.Client and the clients of AddUser. Default: NewScheme().
	Scheme *k8sruntime.Scheme

	// SkipAdmissionPolicies leaves out the toolgate-identity admission policy.
	SkipAdmissionPolicies bool

	// AttachControlPlaneOutput streams the kube-apiserver's and etcd's logs to this process.
	AttachControlPlaneOutput bool

	// SetupTimeout bounds installing the policies and waiting until they take effect.
	// Default 30s.
	SetupTimeout time.Duration

	// RestartableAPIServer keeps the API server's certificates in a directory of the Env's
	// own (removed by Stop), so that Env.RestartAPIServer can stop and start it again on
	// the same port and etcd with the same serving certificate: clients keep working.
	RestartableAPIServer bool

	// APIServerFlags are more kube-apiserver flags, without the leading dashes, e.g.
	// {"max-requests-inflight": "20"}; each replaces envtest's value of the same flag.
	APIServerFlags map[string]string
}

// Env is a running kube-apiserver and etcd with toolgate's CRDs (and, unless skipped, its
// admission policies) installed and in effect.
type Env struct {
	// Config is the admin's (AdminUser, system:masters) REST config.
	Config *rest.Config
	// Client is the admin's client, with Scheme.
	Client client.Client
	// Scheme holds client-go's kinds, apiextensions/v1 and toolgate.dev/v1alpha1.
	Scheme *k8sruntime.Scheme
	// Env is the underlying envtest environment.
	Env *envtest.Environment

	// certDir is the API server's certificate directory with RestartableAPIServer.
	certDir string
}

// Start starts kube-apiserver and etcd, installs the embedded CRDs (waiting until they are
// served), creates the EditorsGroup RBAC, applies the embedded admission policies and waits
// until each is in effect (a policy takes a moment to propagate). On error
// nothing is left running.
func Start(opts Options) (*Env, error) {
	assets, err := AssetsDirectory(opts.BinaryAssetsDirectory)
	if err != nil {
		return nil, err
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = NewScheme()
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		Scheme:                   scheme,
		CRDInstallOptions:        envtest.CRDInstallOptions{CRDs: crds},
		AttachControlPlaneOutput: opts.AttachControlPlaneOutput,
	}
	for flag, value := range opts.APIServerFlags {
		te.ControlPlane.GetAPIServer().Configure().Set(flag, value)
	}
	certDir := ""
	if opts.RestartableAPIServer {
		if certDir, err = os.MkdirTemp("", "toolgatetest-apiserver-"); err != nil {
			return nil, err
		}
		api := te.ControlPlane.GetAPIServer()
		// A restart is abrupt: SIGTERM, then SIGKILL after 3 s (the default 20 s is mostly
		// kube-apiserver draining its watches).
		api.CertDir, api.StopTimeout = certDir, 3*time.Second
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting envtest: %w", err), te.Stop(), removeDir(certDir))
	}
	e := &Env{Config: cfg, Scheme: scheme, Env: te, certDir: certDir}
	if err := e.setup(opts); err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	return e, nil
}

func removeDir(dir string) error {
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}

// RestartAPIServer stops the kube-apiserver (SIGTERM, then SIGKILL after 3 s) and starts it again on the same port, etcd and certificates; it returns once
// the new one answers its health check (a start that fails, say because the old process
// still holds the port, is tried again, three times in all). Needs
// Options.RestartableAPIServer. Clients and watches see the API server go away and come
// back, as on a control-plane restart.
func (e *Env) RestartAPIServer() error {
	if e.certDir == "" {
		return errors.New("RestartAPIServer needs Options.RestartableAPIServer")
	}
	api := e.Env.ControlPlane.GetAPIServer()
	// A stop that timed out has killed the process: start again all the same.
	stopErr := api.Stop()
	var errs []error
	for try := range 3 {
		if try > 0 {
			time.Sleep(time.Duration(try) * time.Second)
		}
		err := api.Start()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("starting kube-apiserver again: %w", errors.Join(append([]error{stopErr}, errs...)...))
}

func (e *Env) setup(opts Options) error {
	var err error
	if e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return err
	}
	timeout := opts.SetupTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := e.createEditorsRBAC(ctx); err != nil {
		return err
	}
	if opts.SkipAdmissionPolicies {
		return nil
	}
	policies, err := AdmissionPolicies()
	if err != nil {
		return err
	}
	for _, obj := range policies {
		if err := e.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return e.waitForIdentityPolicy(ctx)
}

// Stop stops kube-apiserver and etcd. Safe on a nil Env.
func (e *Env) Stop() error {
	if e == nil || e.Env == nil {
		return nil
	}
	return errors.Join(e.Env.Stop(), removeDir(e.certDir))
}

// UserConfig provisions a user (a client certificate with CN=name, O=groups) and returns
// its REST config. The user has only the permissions RBAC gives it: use EditorsGroup for
// full access to toolgate.dev resources.
func (e *Env) UserConfig(name string, groups []string) (*rest.Config, error) {
	u, err := e.Env.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return nil, err
	}
	return u.Config(), nil
}

// AddUser provisions a user as UserConfig does and returns a client acting as it, with the
// Env's scheme.
func (e *Env) AddUser(name string, groups []string) (client.Client, error) {
	cfg, err := e.UserConfig(name, groups)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: e.Scheme})
}

// CreateNamespace creates a namespace named prefix-<random>, for one spec's objects.
// envtest runs no namespace controller: a deleted namespace's objects stay until Stop.
func (e *Env) CreateNamespace(ctx context.Context, prefix string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return nil, err
	}
	return ns, nil
}

func (e *Env) createEditorsRBAC(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: editorsRole},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{toolgatev1alpha1.GroupVersion.Group},
			Resources: []string{rbacv1.ResourceAll},
			Verbs:     []string{rbacv1.VerbAll},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: editorsRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: editorsRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: EditorsGroup}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := e.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// AssetsDirectory resolves the folder holding kube-apiserver, etcd and kubectl: explicit if
// set, else $KUBEBUILDER_ASSETS, else <toolgate module root>/bin/k8s. It fails with a hint
// when the binaries are missing.
func AssetsDirectory(explicit string) (string, error) {
	dir := explicit
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if dir == "" {
		root, err := ModuleRoot()
		if err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and %w", err)
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("envtest binaries: %w (build them with `make envtest-binaries`)", err)
		}
	}
	return dir, nil
}

// ModuleRoot finds the toolgate module's root folder: the first parent of the working
// directory whose go.mod declares ModulePath, else the module this file was compiled from.
func ModuleRoot() (string, error) {
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if isToolgateRoot(dir) {
				return dir, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		if dir := filepath.Join(filepath.Dir(file), "..", ".."); isToolgateRoot(dir) {
			return filepath.Clean(dir), nil
		}
	}
	return "", fmt.Errorf("no go.mod of module %s above the working directory", ModulePath)
}

func isToolgateRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == ModulePath
		}
	}
	return false
}
