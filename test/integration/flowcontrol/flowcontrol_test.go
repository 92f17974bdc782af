package flowcontrol_test

import (
	"fmt"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/config/flowcontrol"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// identity is a client acting as one user, recording how each of its requests was classified.
type identity struct {
	name      string
	client    client.Client
	clientset *kubernetes.Clientset
	rec       *toolgatetest.PFRecorder
}

// serviceAccount is the identity kube-apiserver gives a ServiceAccount's token, as a client
// certificate: its user name and groups (system:authenticated is added by the server). The
// kit's editors group grants the toolgate.dev verbs.
func serviceAccount(namespace, name string) *identity {
	return user(fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		"system:serviceaccounts", "system:serviceaccounts:"+namespace)
}

func user(name string, groups ...string) *identity {
	GinkgoHelper()
	cfg, err := env.UserConfig(name, append(groups, toolgatetest.EditorsGroup))
	Expect(err).NotTo(HaveOccurred())
	id := &identity{name: name, rec: &toolgatetest.PFRecorder{}}
	cfg = id.rec.Wrap(cfg)
	id.client, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	id.clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return id
}

// classified names the FlowSchema and priority level of the identity's latest response.
func (id *identity) classified(ctx SpecContext) string {
	GinkgoHelper()
	return names(ctx, id.rec.Last())
}

// names turns a classification's UIDs into "flowschema/level" by the objects' names.
func names(ctx SpecContext, c toolgatetest.PFClassification) string {
	GinkgoHelper()
	var schemas flowcontrolv1.FlowSchemaList
	var levels flowcontrolv1.PriorityLevelConfigurationList
	Expect(env.Client.List(ctx, &schemas)).To(Succeed())
	Expect(env.Client.List(ctx, &levels)).To(Succeed())
	fs, pl := "?"+string(c.FlowSchemaUID), "?"+string(c.PriorityLevelUID)
	for _, s := range schemas.Items {
		if s.UID == c.FlowSchemaUID {
			fs = s.Name
		}
	}
	for _, l := range levels.Items {
		if l.UID == c.PriorityLevelUID {
			pl = l.Name
		}
	}
	return fs + "/" + pl
}

var calls atomic.Int64

// createCall creates a ToolCall as the identity (requester = its user name) and returns how
// the create was classified.
func (id *identity) createCall(ctx SpecContext, ns string) (*toolgatev1alpha1.ToolCall, string) {
	GinkgoHelper()
	tc := toolgatetest.MakeToolCall(fmt.Sprintf("c%d", calls.Add(1)), ns).Tool("echo").Requester(id.name).Obj()
	Expect(id.client.Create(ctx, tc)).To(Succeed())
	return tc, id.classified(ctx)
}

const (
	operator = flowcontrol.OperatorName + "/" + flowcontrol.OperatorName
	agents   = flowcontrol.AgentsName + "/" + flowcontrol.AgentsName
	// The suggested objects kube-apiserver creates itself.
	serviceAccounts = "service-accounts/workload-low"
	globalDefault   = "global-default/global-default"
)

var _ = Describe("toolgate's FlowSchemas", Ordered, func() {
	var (
		ns                     string
		op, agent, alice, twin *identity
	)

	BeforeAll(func(ctx SpecContext) {
		ns = suite.NewNamespace(ctx, env, "apf")
		op = serviceAccount(flowcontrol.OperatorNamespace, flowcontrol.OperatorServiceAccount)
		agent = serviceAccount("agents", "coder")
		alice = user("alice")
		// The operator's ServiceAccount name in another namespace: not the operator.
		twin = serviceAccount("other", flowcontrol.OperatorServiceAccount)
		// kube-apiserver applies new flowcontrol objects asynchronously (its config
		// controller): wait until both schemas classify requests.
		Eventually(func(g Gomega, ctx SpecContext) {
			var list toolgatev1alpha1.ToolCallList
			g.Expect(op.client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(op.classified(ctx)).To(Equal(operator))
			_, got := alice.createCall(ctx, ns)
			g.Expect(got).To(Equal(agents))
		}).WithContext(ctx).Should(Succeed())
	})

	It("are served as flowcontrol.apiserver.k8s.io/v1 and refer to existing levels", func(ctx SpecContext) {
		for _, name := range []string{flowcontrol.OperatorName, flowcontrol.AgentsName} {
			fs := &flowcontrolv1.FlowSchema{}
			Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, fs)).To(Succeed())
			Eventually(func(g Gomega, ctx SpecContext) {
				g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, fs)).To(Succeed())
				g.Expect(fs.Status.Conditions).To(ContainElement(And(
					HaveField("Type", flowcontrolv1.FlowSchemaConditionType(flowcontrolv1.FlowSchemaConditionDangling)),
					HaveField("Status", flowcontrolv1.ConditionFalse))))
			}).WithContext(ctx).Should(Succeed())
		}
	})

	It("put every request of the operator's ServiceAccount into toolgate-operator", func(ctx SpecContext) {
		tc := toolgatetest.MakeToolCall("op-status", ns).Tool("echo").Obj()
		Expect(env.Client.Create(ctx, tc)).To(Succeed())

		Expect(op.client.Get(ctx, client.ObjectKeyFromObject(tc), tc)).To(Succeed())
		Expect(op.classified(ctx)).To(Equal(operator), "get")
		tc.Status.ObservedGeneration = tc.Generation
		Expect(op.client.Status().Update(ctx, tc)).To(Succeed())
		Expect(op.classified(ctx)).To(Equal(operator), "status update")
		_, got := op.createCall(ctx, ns)
		Expect(got).To(Equal(operator), "ToolCall create: the operator's schema comes first")
		Expect(op.client.Delete(ctx, tc)).To(Succeed())
		Expect(op.classified(ctx)).To(Equal(operator), "delete")
		_, err := op.clientset.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(op.classified(ctx)).To(Equal(operator), "GET /version (a non-resource URL)")
	})

	It("put agents' ToolCall writes into toolgate-agents, and leave their other requests alone", func(ctx SpecContext) {
		tc, got := agent.createCall(ctx, ns)
		Expect(got).To(Equal(agents), "a ServiceAccount's create")
		Expect(agent.client.Delete(ctx, tc)).To(Succeed())
		Expect(agent.classified(ctx)).To(Equal(agents), "a ServiceAccount's delete")
		var list toolgatev1alpha1.ToolCallList
		Expect(agent.client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(agent.classified(ctx)).To(Equal(serviceAccounts), "a ServiceAccount's list")

		_, got = alice.createCall(ctx, ns)
		Expect(got).To(Equal(agents), "a user's create")
		Expect(alice.client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(alice.classified(ctx)).To(Equal(globalDefault), "a user's list")
	})

	It("match the operator's ServiceAccount by namespace and name, not by name alone", func(ctx SpecContext) {
		_, got := twin.createCall(ctx, ns)
		Expect(got).To(Equal(agents))
		var list toolgatev1alpha1.ToolCallList
		Expect(twin.client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(twin.classified(ctx)).To(Equal(serviceAccounts))
	})
})
