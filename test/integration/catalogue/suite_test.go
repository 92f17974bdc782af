// Package catalogue_test is the adversarial input catalogue (docs/adversarial.md): one table
// (cases_test.go) of hostile inputs — arguments, schemas, policies, outputs, images,
// registry shapes and identities — each run through the real reconcilers on envtest, in a
// namespace of its own, with the exact outcome it must have: refused at admission with a
// specific error, or a terminal phase with its reason and message. After the table the
// operator must still be healthy: no reconciler panicked, and a plain call still succeeds.
package catalogue_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var (
	env       *toolgatetest.Env
	k8sClient client.Client
	mgr       *toolgatetest.Manager
	kubelet   *toolgatetest.Kubelet
	// fakeClock is the operator's clock: rows step it past approval windows and deadlines.
	fakeClock *clocktesting.FakeClock
)

func TestCatalogue(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Adversarial catalogue")
}

var _ = BeforeSuite(func() {
	env = suite.Start()
	k8sClient = env.Client
	fakeClock = clocktesting.NewFakeClock(time.Now())
	mgr = suite.StartManager(env, toolgatetest.ManagerOptions{Clock: fakeClock})
	kubelet = mgr.Kubelet
})

// Each row starts with the operator's clock at the real time (the API server dates
// approvals; a clock an earlier row stepped ahead would make them look stale).
var _ = BeforeEach(func() { fakeClock.SetTime(time.Now()) })

var _ = AfterSuite(func() {
	if mgr != nil {
		Expect(mgr.Stop()).To(Succeed(), "the manager stops cleanly")
	}
	Expect(env.Stop()).To(Succeed())
})
