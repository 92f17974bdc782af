package suite

import (
	"os"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Kubeconfigs are one kubeconfig file per user, in a directory of their own, for the suites
// that run the CLI with --kubeconfig (cli, console).
type Kubeconfigs struct {
	env   *toolgatetest.Env
	dir   string
	paths map[string]string
}

// NewKubeconfigs creates the directory (named prefix…) and writes the admin's kubeconfig
// (toolgatetest.AdminUser). Call Remove in AfterSuite.
func NewKubeconfigs(env *toolgatetest.Env, prefix string) *Kubeconfigs {
	ginkgo.GinkgoHelper()
	dir, err := os.MkdirTemp("", prefix)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	k := &Kubeconfigs{env: env, dir: dir, paths: map[string]string{}}
	k.paths[toolgatetest.AdminUser] = WriteKubeconfig(dir, toolgatetest.AdminUser, env.Config)
	return k
}

// AddUser provisions a user (a client certificate with these groups, Env.UserConfig),
// writes its kubeconfig and returns its REST config.
func (k *Kubeconfigs) AddUser(name string, groups []string) *rest.Config {
	ginkgo.GinkgoHelper()
	cfg, err := k.env.UserConfig(name, groups)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	k.paths[name] = WriteKubeconfig(k.dir, name, cfg)
	return cfg
}

// Path is the user's kubeconfig; it fails the spec for a user that was never added.
func (k *Kubeconfigs) Path(user string) string {
	ginkgo.GinkgoHelper()
	path, ok := k.paths[user]
	gomega.Expect(ok).To(gomega.BeTrue(), "no kubeconfig for user %q", user)
	return path
}

// Remove deletes the directory and every kubeconfig in it.
func (k *Kubeconfigs) Remove() error { return os.RemoveAll(k.dir) }
