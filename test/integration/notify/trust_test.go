package notify_test

import (
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/approvalevents"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("A sink's key", Label("notify", "trust"), func() {
	It("is only ever a Secret made for it: a sink naming another Secret is sent nothing and the call says why", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		By("a scope's writer who may not read Secrets names an unrelated one (and one that does not exist)")
		create(ctx,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Data: map[string][]byte{"hmac-key": []byte("the database password")}},
			MakeToolScope("borrowed", ns).ApprovalSink("oracle", sink.URL+"/oracle", "db").
				ApprovalSink("ghost", sink.URL+"/ghost", "nowhere").Obj())
		call := park(ctx, ns, "o1", "borrowed")
		received(ctx, defaultSink, call, approvalevents.TypeRequested)

		var oracle, ghost string
		Eventually(func(g Gomega) {
			oracle, ghost = "", ""
			for _, n := range failureEvents(ctx, ns, "o1") {
				switch {
				case strings.Contains(n, "sink borrowed/oracle"):
					oracle = n
				case strings.Contains(n, "sink borrowed/ghost"):
					ghost = n
				}
			}
			g.Expect(oracle).NotTo(BeEmpty())
			g.Expect(ghost).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		Expect(oracle).To(ContainSubstring("no Secret " + ns + "/db of type " + v1alpha1.SecretTypeApprovalSinkKey))
		Expect(sink.requests()).To(BeEmpty(), "nothing was signed with the unrelated Secret, nor sent")
		By("the note does not tell a Secret of another type from one that does not exist")
		Expect(strings.NewReplacer("oracle", "X", "db", "Y").Replace(oracle)).
			To(Equal(strings.NewReplacer("ghost", "X", "nowhere", "Y").Replace(ghost)))
	})
})

var _ = Describe("Every delivery given up", Label("notify", "trust"), func() {
	It("is an Event of its own on the call, each naming its sink and approval event", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		down := newReceiver(teamKey)
		down.Close() // every connection refused
		create(ctx, MakeToolScope("many", ns).ApprovalSink("a", down.URL+"/a", "team-sink").
			ApprovalSink("b", down.URL+"/b", "team-sink").ApprovalSink("c", down.URL+"/c", "team-sink").Obj())
		call := park(ctx, ns, "m1", "many")
		Eventually(func() []string { return failureEvents(ctx, ns, "m1") }).WithContext(ctx).Should(HaveLen(3))
		create(ctx, MakeToolCallApproval("m1", ns).For(call).Obj())
		waitPhase(ctx, call, v1alpha1.PhaseSucceeded)

		want := []any{}
		for _, ev := range []string{"Requested", "Approved"} {
			for _, s := range []string{"a", "b", "c"} {
				want = append(want, Equal("approval event "+ev+" not delivered to sink many/"+s+" after "+strconv.Itoa(maxAttempts)+" attempt(s): the sink is unreachable"))
			}
		}
		Eventually(func() []string { return failureEvents(ctx, ns, "m1") }).WithContext(ctx).Should(ConsistOf(want...),
			"six deliveries failed: six Events on the API server")
	})
})
