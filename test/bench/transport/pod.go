package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const serverName = "toolgate-session"

// buildImage builds the responder statically, packs it as o.image and imports it into the
// cluster's containerd (<cluster-root>/hack/cluster.sh load).
func buildImage(o options) error {
	dir, err := os.MkdirTemp("", "bench-transport-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, tar := filepath.Join(dir, "responder"), filepath.Join(dir, "responder.tar")
	steps := [][]string{
		{"go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./test/bench/transport/responder"},
		{"go", "run", "./hack/imgpack", "-name", o.image, "-entrypoint", "/responder", "-user", "65532:65532",
			"-file", bin + "=/responder", "-out", tar},
		{filepath.Join(o.clusterRoot, "hack", "cluster.sh"), "load", tar},
	}
	for i, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if i == 2 {
			cmd.Dir = o.clusterRoot
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%v: %w", s, err)
		}
	}
	return nil
}

// creds are the bench's HMAC key and its mutual-TLS material, all made in-process.
type creds struct {
	key                        []byte
	serverCert, serverKey, caP []byte
	client                     *tls.Config
}

func newCreds() (creds, error) {
	var c creds
	c.key = make([]byte, 32)
	if _, err := rand.Read(c.key); err != nil {
		return c, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-transport CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string) ([]byte, []byte, error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		t := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &k.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kd, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
	}
	if c.serverCert, c.serverKey, err = leaf(2, serverName, x509.ExtKeyUsageServerAuth, []string{serverName}); err != nil {
		return c, err
	}
	cc, ck, err := leaf(3, "toolgate-operator", x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return c, err
	}
	c.caP = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	pair, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		return c, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	// No ClientSessionCache: each new connection pays a full TLS 1.3 handshake.
	c.client = &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, ServerName: serverName,
		MinVersion: tls.VersionTLS13}
	return c, nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", benchLabel: "true"}}},
		metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// responderPod is the long-running Pod of one runtime: the restricted profile, stdin open
// across attach sessions (stdinOnce false), no TTY.
func responderPod(o options, rt string, c creds) *corev1.Pod {
	mem := "64Mi"
	var rc *string
	if rt != "runc" {
		rc, mem = ptr.To(rt), "256Mi" // gVisor's kernel lives inside the sandbox's memory
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "responder-" + rt, Namespace: o.ns, Labels: map[string]string{benchLabel: rt}},
		Spec: corev1.PodSpec{
			RuntimeClassName:              rc,
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "runner", Image: o.image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/responder", "serve"},
				Stdin:   true, StdinOnce: false, TTY: false,
				Env: []corev1.EnvVar{
					{Name: "TG_KEY", Value: hex.EncodeToString(c.key)},
					{Name: "TG_TLS_CERT", Value: string(c.serverCert)},
					{Name: "TG_TLS_KEY", Value: string(c.serverKey)},
					{Name: "TG_CLIENT_CA", Value: string(c.caP)},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Privileged: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: "/run/tg"}},
			}},
			Volumes: []corev1.Volume{{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// startPod (re)creates the Pod p and waits until it runs and its TCP port answers.
func startPod(ctx context.Context, cs kubernetes.Interface, o options, p *corev1.Pod) (string, error) {
	pods := cs.CoreV1().Pods(o.ns)
	if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err == nil {
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create %s: %w", p.Name, err)
	}
	var ip string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod %s ended: %s", p.Name, got.Status.Phase)
		}
		if got.Status.Phase != corev1.PodRunning || got.Status.PodIP == "" {
			return false, nil
		}
		ip = got.Status.PodIP
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), time.Second)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s not serving: %w", p.Name, err)
	}
	return ip, nil
}

func deleteNamespace(cs kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
