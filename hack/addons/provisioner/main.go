//go:build ignore

// Command provisioner is the local cluster's dynamic volume provisioner: a hostPath volume per
// claim, in a directory of its own under --root, built on the SIG Storage library for external
// provisioners (sigs.k8s.io/sig-storage-lib-external-provisioner). hack/k8s-binaries.sh copies
// this file into a wrapper module under bin/k8s-src and builds it into bin/k8s.
//
// Why not the controller-manager's own hostPath provisioner: it creates each volume's directory
// as root with mode 0750, so a non-root Pod (every tool Pod runs as non-root) cannot write to
// it, and hostPath volumes ignore fsGroup. Here each directory is mode 0777 inside a root-only
// (0700) parent: only a Pod that mounts the volume reaches it. The size of a claim is recorded,
// not enforced (a hostPath has no quota); docs/local-cluster.md says so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

type hostPathProvisioner struct{ root string }

func (p hostPathProvisioner) Provision(_ context.Context, o controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	if o.PVC.Spec.Selector != nil {
		return nil, controller.ProvisioningFinished, errors.New("claims with a selector are not supported")
	}
	dir := filepath.Join(p.root, o.PVName)
	if err := os.Mkdir(dir, 0o777); err != nil && !os.IsExist(err) {
		return nil, controller.ProvisioningFinished, err
	}
	// Mkdir's mode is masked by the umask; the volume must be writable by any non-root user.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	hostPathType := v1.HostPathDirectory
	pv := &v1.PersistentVolume{
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: *o.StorageClass.ReclaimPolicy,
			AccessModes:                   o.PVC.Spec.AccessModes,
			MountOptions:                  o.StorageClass.MountOptions,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: o.PVC.Spec.Resources.Requests[v1.ResourceStorage]},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: dir, Type: &hostPathType},
			},
		},
	}
	pv.Name = o.PVName
	return pv, controller.ProvisioningFinished, nil
}

func (p hostPathProvisioner) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	if pv.Spec.HostPath == nil {
		return errors.New("not a hostPath volume")
	}
	dir := filepath.Clean(pv.Spec.HostPath.Path)
	if filepath.Dir(dir) != p.root || !strings.HasPrefix(filepath.Base(dir), "pvc-") {
		return fmt.Errorf("refusing to delete %q: not a volume directory under %s", dir, p.root)
	}
	return os.RemoveAll(dir)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the provisioner's user")
	name := flag.String("name", "toolgate.local/hostpath", "provisioner name (StorageClass.provisioner)")
	root := flag.String("root", "", "directory that holds one directory per volume (created 0700)")
	metrics := flag.String("metrics-address", "127.0.0.1:10331", "address of /metrics and /healthz")
	klog.InitFlags(nil)
	flag.Parse()
	if *root == "" || !filepath.IsAbs(*root) {
		klog.Fatal("--root must be an absolute path")
	}
	if err := os.MkdirAll(*root, 0o700); err != nil {
		klog.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	host, port, _ := strings.Cut(*metrics, ":")
	var metricsPort int32
	if _, err := fmt.Sscan(port, &metricsPort); err != nil {
		klog.Fatalf("--metrics-address %q: %v", *metrics, err)
	}
	pc := controller.NewProvisionController(ctx, client, *name, hostPathProvisioner{root: filepath.Clean(*root)},
		controller.LeaderElection(false), controller.MetricsAddress(host), controller.MetricsPort(metricsPort))
	pc.Run(ctx)
}
