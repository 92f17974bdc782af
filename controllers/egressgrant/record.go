package egressgrant

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/egress"
)

// maxRecordBytes bounds what the operator reads from the proxy's records endpoint.
const maxRecordBytes = 64 << 10

// EndGrant ends the grant of attempt a, which ended, and returns what the proxy saw of it,
// for the attempt's status: from then on the proxy refuses the grant (GrantEnded). deadline
// is the attempt's deadline, from its start: the grant's signed expiry is derived from it.
// A proxy that cannot be reached costs the call nothing but the record: the attempt's
// outcome stands, the record's Unavailable says why, and the grant works until its signed
// expiry.
func (o ProxyOptions) EndGrant(ctx context.Context, call *toolgatev1alpha1.ToolCall, a toolgatev1alpha1.Attempt, deadline time.Time) *toolgatev1alpha1.EgressLog {
	log, err := endGrant(ctx, o, string(call.UID), a.Attempt, GrantExpiry(deadline), a.StartTime)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("egress records unavailable", "attempt", a.Attempt, "error", err.Error())
		msg := "the egress proxy's records could not be read: " + err.Error()
		log = &toolgatev1alpha1.EgressLog{Unavailable: msg[:min(len(msg), 256)]}
	}
	return log
}

// endGrant asks the proxy to end an attempt's grant (until its expiry) and answer the
// attempt's final record.
func endGrant(ctx context.Context, o ProxyOptions, uid string, attempt int32, until time.Time, started *metav1.Time) (*toolgatev1alpha1.EgressLog, error) {
	if o.RecordsURL == "" || len(o.Key) == 0 {
		return nil, fmt.Errorf("no records URL configured (--egress-proxy-records-url)")
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, egress.EndURL(o.RecordsURL, url.PathEscape(uid), attempt, until), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+egress.RecordsToken(o.Key))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var rec egress.Record
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxRecordBytes)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	log := recordOf(rec)
	if started != nil && rec.ProxyStarted > started.Unix() {
		log.Unavailable = "the egress proxy restarted during the attempt: what it saw before is lost"
	}
	return log, nil
}

// recordOf converts the proxy's record into status, bounded and checked again: a host is a
// name, an address or "(invalid)", whatever the proxy answered.
func recordOf(rec egress.Record) *toolgatev1alpha1.EgressLog {
	out := &toolgatev1alpha1.EgressLog{Omitted: max(rec.Omitted, 0)}
	for i, d := range rec.Destinations {
		if i >= egress.MaxDestinations {
			out.Omitted += d.Allowed + d.Refused
			continue
		}
		host := egress.InvalidHost
		if n, ok := egress.NormalizeHost(d.Host); ok {
			host = n
		} else if a, err := netip.ParseAddr(d.Host); err == nil {
			host = a.String()
		}
		reason := ""
		if slices.Contains(egress.RefusalReasons(), d.Reason) {
			reason = d.Reason
		}
		out.Destinations = append(out.Destinations, toolgatev1alpha1.EgressDestination{Host: host,
			Port: min(max(d.Port, 0), 65535), Allowed: max(d.Allowed, 0), Refused: max(d.Refused, 0), Reason: reason})
	}
	return out
}
