package tracing_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/tracing"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// jaegerBinary is bin/jaeger (make jaeger) or $JAEGER_BIN; "" when it is not built.
func jaegerBinary() string {
	p := os.Getenv("JAEGER_BIN")
	if p == "" {
		p, _ = filepath.Abs(filepath.Join("..", "..", "..", "bin", "jaeger"))
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// startJaeger runs Jaeger on loopback with free ports (hack/jaeger/config.yaml) for the
// spec; it returns the query API's base URL and the OTLP gRPC address.
func startJaeger(bin string) (query, otlp string) {
	GinkgoHelper()
	ports := map[string]int{}
	for _, k := range []string{"JAEGER_QUERY_PORT", "JAEGER_QUERY_GRPC_PORT", "JAEGER_HEALTH_PORT", "JAEGER_OTLP_GRPC_PORT", "JAEGER_OTLP_HTTP_PORT"} {
		ports[k] = freePort()
	}
	cfg, err := filepath.Abs(filepath.Join("..", "..", "..", "hack", "jaeger", "config.yaml"))
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(os.Environ(), "JAEGER_OTLP_HOST=127.0.0.1")
	for k, v := range ports {
		cmd.Env = append(cmd.Env, k+"="+strconv.Itoa(v))
	}
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	query = fmt.Sprintf("http://127.0.0.1:%d", ports["JAEGER_QUERY_PORT"])
	Eventually(func() error {
		resp, err := http.Get(query + "/api/services")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}).Should(Succeed())
	return query, fmt.Sprintf("127.0.0.1:%d", ports["JAEGER_OTLP_GRPC_PORT"])
}

type jaegerTrace struct {
	Data []struct {
		Spans []struct {
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			References    []struct {
				RefType, SpanID string
			} `json:"references"`
			ProcessID string `json:"processID"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

var _ = Describe("The operator's OTLP export into a real Jaeger", Label("tracing", "jaeger"), func() {
	It("lands the call's trace in Jaeger, readable from its query API", func(ctx SpecContext) {
		bin := jaegerBinary()
		if bin == "" {
			if os.Getenv("TRACING") == "1" {
				Fail("TRACING=1 but bin/jaeger is not built (make jaeger)")
			}
			Skip("bin/jaeger is not built (make jaeger; make test builds it)")
		}
		query, otlp := startJaeger(bin)
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(otlp), otlptracegrpc.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
		m := suite.StartManager(env, ManagerOptions{TraceExporter: exp})
		DeferCleanup(m.Stop)
		ns := suite.NewNamespace(ctx, env, "jaeger")
		create(ctx, echoTool(ns).Obj(), tracedCall("to-jaeger", ns, "echo", AdminUser))
		Expect(waitPhase(ctx, ns, "to-jaeger", true, "")).To(HavePhase(v1alpha1.PhaseSucceeded))

		var tr jaegerTrace
		Eventually(func(g Gomega) {
			resp, err := http.Get(query + "/api/traces/" + callerTraceID)
			g.Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			tr = jaegerTrace{}
			g.Expect(json.NewDecoder(resp.Body).Decode(&tr)).To(Succeed())
			g.Expect(tr.Data).To(HaveLen(1))
			var names []string
			for _, s := range tr.Data[0].Spans {
				names = append(names, s.OperationName)
			}
			g.Expect(names).To(ConsistOf(tracing.SpanCall, tracing.SpanResolve, tracing.SpanFreeze, tracing.SpanValidate,
				tracing.SpanPreExecute, tracing.SpanGuard, tracing.SpanJobStart, tracing.SpanExecute, tracing.SpanNormalize,
				tracing.SpanPostExecute, tracing.SpanFreezeResult))
		}).WithContext(ctx).Should(Succeed())
		rootID := ""
		for _, s := range tr.Data[0].Spans {
			Expect(tr.Data[0].Processes[s.ProcessID].ServiceName).To(Equal("toolgate"))
			if s.OperationName == tracing.SpanCall {
				rootID = s.SpanID
				Expect(s.References).To(ContainElement(HaveField("SpanID", callerSpanID)))
			}
		}
		for _, s := range tr.Data[0].Spans {
			if s.OperationName != tracing.SpanCall {
				Expect(s.References).To(ContainElement(HaveField("SpanID", rootID)), s.OperationName)
			}
		}
	})
})
