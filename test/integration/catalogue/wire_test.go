package catalogue_test

import (
	"encoding/json"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// callBody is the ToolCall create request of a row, with spec.arguments exactly as the row
// writes them (invalid JSON included: the client would refuse to send it).
func callBody(ns string, r row) []byte {
	str := func(s string) string {
		b, err := json.Marshal(s)
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}
	spec := `"tool":` + str(r.calledTool()) + `,"requester":` + str(r.spec())
	if r.scope != "" {
		spec += `,"scope":` + str(r.scope)
	}
	switch r.args {
	case "":
		spec += `,"arguments":{}`
	case "-":
	default:
		spec += `,"arguments":` + r.args
	}
	return []byte(`{"apiVersion":"toolgate.dev/v1alpha1","kind":"ToolCall","metadata":{"name":` + str(r.name()) +
		`,"namespace":` + str(ns) + `},"spec":{` + spec + `}}`)
}

// postCall sends a ToolCall create as user (the admin, or an editor of that name) with the
// body as is, and returns the API server's answer.
func postCall(ctx SpecContext, user, ns, query string, body []byte) error {
	cfg := rest.CopyConfig(userConfig(user))
	cfg.GroupVersion = &v1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(env.Scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	req := rc.Post().Namespace(ns).Resource("toolcalls").SetHeader("Content-Type", "application/json").Body(body)
	if query != "" {
		k, v, _ := strings.Cut(query, "=")
		req = req.Param(k, v)
	}
	return req.Do(ctx).Error()
}

var (
	usersMu sync.Mutex
	users   = map[string]*rest.Config{}
)

// userConfig is the REST config of the admin or of an editor user (every verb on every
// toolgate.dev resource), provisioned once.
func userConfig(name string) *rest.Config {
	if name == tg.AdminUser {
		return env.Config
	}
	usersMu.Lock()
	defer usersMu.Unlock()
	if cfg, ok := users[name]; ok {
		return cfg
	}
	cfg, err := env.UserConfig(name, []string{tg.EditorsGroup})
	Expect(err).NotTo(HaveOccurred())
	users[name] = cfg
	return cfg
}

// userClient is a client acting as userConfig(name).
func userClient(name string) client.Client {
	c, err := client.New(userConfig(name), client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// createAll creates objects as the admin; many of them (a registry of thousands) in
// parallel through a client of its own that is not rate-limited.
func createAll(ctx SpecContext, objs []client.Object) {
	GinkgoHelper()
	if len(objs) < 50 {
		for _, o := range objs {
			Expect(k8sClient.Create(ctx, o)).To(Succeed())
		}
		return
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	fast, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	work := make(chan client.Object)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer GinkgoRecover()
			for o := range work {
				errs <- fast.Create(ctx, o)
			}
		}()
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
}

// waitPodWaiting waits until the simulated kubelet has played the call's Pod (it exists
// and its tool container has a state), so that stepping the clock cannot race its start.
func waitPodWaiting(ctx SpecContext, ns string) {
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty(), "the call's Pod is created")
		g.Expect(pods.Items[0].Status.ContainerStatuses).NotTo(BeEmpty(), "the kubelet reported on it")
	}).WithContext(ctx).Should(Succeed())
}
