// Package notify_test runs the operator against envtest with real HTTP receivers
// (httptest TLS servers) as approval sinks: the CloudEvents they get, their signatures, the
// retries, and that no sink can stall or fail a call.
package notify_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/notify"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

const (
	consoleURL = "https://console.example/toolgate"
	// maxAttempts is the suite's bound on attempts per event and sink.
	maxAttempts = 4
)

var (
	env       *toolgatetest.Env
	k8sClient client.Client
	mgr       *toolgatetest.Manager
	kubelet   *toolgatetest.Kubelet
	fakeClock *clocktesting.FakeClock
	// defaultSink is the operator-wide sink: it receives every spec's calls.
	defaultSink *receiver
	// tlsClient trusts the receivers' certificate (every httptest TLS server has the same).
	tlsClient  *http.Client
	notifyOpts notify.Options
)

func TestNotify(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Approval Notifications Suite")
}

var _ = BeforeSuite(func() {
	env = suite.Start()
	k8sClient = env.Client
	fakeClock = clocktesting.NewFakeClock(time.Now())
	defaultSink = newReceiver(defaultKey)
	DeferCleanup(defaultSink.Close)
	tlsClient = defaultSink.Client()
	notifyOpts = notify.Options{
		Default:    &notify.DefaultSink{URL: defaultSink.URL + "/default", KeyFile: writeKeyFile(defaultKey)},
		ConsoleURL: consoleURL, MaxAttempts: maxAttempts, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond,
		Timeout: 2 * time.Second, TLSConfig: tlsClient.Transport.(*http.Transport).TLSClientConfig,
		// The receivers are httptest servers on loopback, which sinks may not reach unless
		// allowed.
		Addresses: notify.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	}
	startManager()
})

var _ = BeforeEach(func() { fakeClock.SetTime(time.Now()) })

var _ = AfterSuite(func() {
	Expect(mgr.Stop()).To(Succeed())
	Expect(env.Stop()).To(Succeed())
})

func startManager() {
	mgr = suite.StartManager(env, toolgatetest.ManagerOptions{Clock: fakeClock, Kubelet: kubelet, Notify: notifyOpts})
	kubelet = mgr.Kubelet
}

// The delivery latency the suite saw (queued → 2xx, from the operator's histogram), reported
// as a figure, never asserted.
var _ = ReportAfterSuite("approval notification latency", func(Report) {
	for _, origin := range []string{"default", "scope"} {
		m := &dto.Metric{}
		if err := metrics.ApprovalNotificationLatency.WithLabelValues(origin).(prometheus.Histogram).Write(m); err != nil {
			continue
		}
		if h := m.GetHistogram(); h.GetSampleCount() > 0 {
			fmt.Fprintf(GinkgoWriter, "approval notifications, %s sinks: %d delivered, mean %.1f ms from queue to 2xx\n",
				origin, h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
		}
	}
})
