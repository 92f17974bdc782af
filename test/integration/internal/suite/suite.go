// Package suite is the set-up the project's envtest suites that run the operator share:
// Ginkgo and Gomega defaults, envtest with toolgate's CRDs and admission policy, and the
// operator with the test kit's simulated Kubelet.
package suite

import (
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Start configures Ginkgo and Gomega (logs to ginkgo.GinkgoWriter, spec contexts bounded by
// the default timeouts, the kit's Eventually timeout and polling) and starts envtest.
// Call it from BeforeSuite; stop the Env in AfterSuite.
func Start() *toolgatetest.Env {
	ginkgo.GinkgoHelper()
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	gomega.EnforceDefaultTimeoutsWhenUsingContexts()
	gomega.SetDefaultEventuallyTimeout(toolgatetest.Timeout)
	gomega.SetDefaultEventuallyPollingInterval(toolgatetest.Interval)
	env, err := toolgatetest.Start(toolgatetest.Options{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return env
}

// StartManager starts the operator's reconcilers and the simulated Kubelet.
func StartManager(env *toolgatetest.Env, opts toolgatetest.ManagerOptions) *toolgatetest.Manager {
	ginkgo.GinkgoHelper()
	mgr, err := env.StartManager(opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return mgr
}

// NewNamespace creates a namespace prefix-<random> for one spec's objects.
func NewNamespace(ctx ginkgo.SpecContext, env *toolgatetest.Env, prefix string) string {
	ginkgo.GinkgoHelper()
	ns, err := env.CreateNamespace(ctx, prefix)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return ns.Name
}

// WriteKubeconfig writes dir/<user>.kubeconfig: cfg's cluster as user, in namespace
// "default", for suites that run the CLI with --kubeconfig.
func WriteKubeconfig(dir, user string, cfg *rest.Config) string {
	ginkgo.GinkgoHelper()
	server := cfg.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[user] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: user, Namespace: "default"}
	kc.CurrentContext = user
	path := filepath.Join(dir, user+".kubeconfig")
	gomega.Expect(clientcmd.WriteToFile(*kc, path)).To(gomega.Succeed())
	return path
}
