package egress

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// endGrant asks the records handler to end g's grant, as the operator does when it collects
// the attempt's record, and returns the record it answered.
func endGrant(t *testing.T, records *httptest.Server, g Grant) Record {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, EndURL(records.URL, g.UID, g.Attempt, time.Unix(g.Expires, 0)), nil)
	req.Header.Set("Authorization", "Bearer "+RecordsToken(testKey))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("end %s: %v, %v", g.Key(), resp, err)
	}
	defer resp.Body.Close()
	var rec Record
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// Once the operator has collected an attempt's record (POST .../end), its grant is refused
// (407, GrantEnded, noted on that record and logged), the tunnels it holds open are closed,
// and another attempt's grant is not touched.
func TestProxyGrantEnded(t *testing.T) {
	logs := &lockedBuffer{}
	f := newTunnelFixture(t, func(c *Config) { c.Log = slog.New(slog.NewTextHandler(logs, nil)) })
	records := httptest.NewServer(NewRecordsHandler(testKey, f.rec))
	defer records.Close()
	g, cred := f.credential(t, "ended")
	other, otherCred := f.credential(t, "running")
	c := f.client(t, g)
	if _, err := f.get(c, "allowed.test"); err != nil {
		t.Fatal(err)
	}
	open := f.tunnel(t, cred, f.echoPort)
	if _, err := io.WriteString(open, "SSH-2.0-x\r\n"); err != nil {
		t.Fatal(err)
	}
	otherOpen := f.tunnel(t, otherCred, f.echoPort)
	if _, err := io.WriteString(otherOpen, "SSH-2.0-y\r\n"); err != nil {
		t.Fatal(err)
	}

	final := endGrant(t, records, g)
	wantFinal := byPort(Destination{Host: "allowed.test", Port: f.port, Allowed: 1}, Destination{Host: "allowed.test", Port: f.echoPort, Allowed: 1})
	if diff := cmp.Diff(wantFinal, final.Destinations); diff != "" {
		t.Errorf("the record the end answered (-want +got):\n%s", diff)
	}
	closedByProxy(t, open)

	c.Transport.(*http.Transport).CloseIdleConnections()
	if _, err := f.get(c, "allowed.test"); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Errorf("a tunnel with an ended grant: %v, want 407", err)
	}
	resp, err := c.Get("http://allowed.test:" + strconv.Itoa(int(f.plainPort)) + "/")
	if err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("plain HTTP with an ended grant: %v, %v; want 407", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	want := byPort(
		Destination{Host: "allowed.test", Port: f.port, Allowed: 1, Refused: 1, Reason: RefusedGrantEnded},
		Destination{Host: "allowed.test", Port: f.plainPort, Refused: 1, Reason: RefusedGrantEnded},
		Destination{Host: "allowed.test", Port: f.echoPort, Allowed: 1})
	if diff := cmp.Diff(want, f.record(t, g)); diff != "" {
		t.Errorf("record after the end (-want +got):\n%s", diff)
	}
	if n := logs.count(RefusedGrantEnded); n != 1 {
		t.Errorf("%d log lines for two refusals in one instant, want 1 (sampled)", n)
	}

	// The other attempt's tunnel and grant work on.
	if _, err := io.WriteString(otherOpen, "ping"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("SSH-2.0-y\r\nping"))
	if _, err := io.ReadFull(otherOpen, got); err != nil {
		t.Errorf("another attempt's tunnel: %q, %v", got, err)
	}
	if _, err := f.get(f.client(t, other), "allowed.test"); err != nil {
		t.Errorf("another attempt's grant: %v", err)
	}
}

// The end endpoint answers only the records token, and wants the grant's expiry.
func TestRecordsEndAuthorized(t *testing.T) {
	rec := NewRecorder(time.Now)
	srv := httptest.NewServer(NewRecordsHandler(testKey, rec))
	defer srv.Close()
	for _, tc := range []struct {
		url, auth string
		want      int
	}{
		{srv.URL + "/records/u/1/end?until=2000000000", "", http.StatusUnauthorized},
		{srv.URL + "/records/u/1/end?until=2000000000", "Bearer " + testGrantSignature(t), http.StatusUnauthorized},
		{srv.URL + "/records/u/1/end", "Bearer " + RecordsToken(testKey), http.StatusBadRequest},
		{srv.URL + "/records/u/x/end?until=2000000000", "Bearer " + RecordsToken(testKey), http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, tc.url, nil)
		req.Header.Set("Authorization", tc.auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != tc.want {
			t.Errorf("%s (%q): %v, %v; want %d", tc.url, tc.auth, resp, err, tc.want)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	if rec.Ended(AttemptKey("u", 1)) {
		t.Error("a refused end request ended the grant")
	}
}

// byPort sorts one host's destinations as a record does.
func byPort(ds ...Destination) []Destination {
	slices.SortFunc(ds, func(a, b Destination) int { return int(a.Port - b.Port) })
	return ds
}

// testGrantSignature is a grant's credential: never a records token.
func testGrantSignature(t *testing.T) string {
	t.Helper()
	cred, err := Sign(testKey, Grant{UID: "u", Attempt: 1, Expires: 2_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// A grant nobody ends (the operator down, the call deleted) still ends at its signed expiry:
// new requests are refused, and a tunnel it opened is closed then.
func TestProxyGrantExpiryClosesTunnels(t *testing.T) {
	f := newTunnelFixture(t)
	g := f.grant("expiring", Rule{"allowed.test", f.echoPort})
	g.Expires = f.now.Unix() // the tunnel's end is a second away on the wall clock
	cred, err := Sign(testKey, g)
	if err != nil {
		t.Fatal(err)
	}
	c := f.tunnel(t, cred, f.echoPort)
	if _, err := io.WriteString(c, "SSH-2.0-x\r\n"); err != nil {
		t.Fatal(err)
	}
	closedByProxy(t, c) // new requests past the expiry: TestProxyCredential
}

// Ended grants are kept until their expiry (the later of the operator's and what the
// proxy saw), pruned after it, and at most maxEnded: the one nearest its expiry goes first.
func TestEndedGrants(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	rec := NewRecorder(func() time.Time { return now })
	seen := Grant{UID: "seen", Attempt: 1, Expires: now.Unix() + 600}
	rec.Note(seen, "allowed.test", 443, "")
	rec.End(seen.Key(), now.Unix()+60) // the operator's expiry is earlier than the grant's
	rec.End(AttemptKey("unseen", 1), now.Unix()+60)
	now = now.Add(5 * time.Minute)
	if !rec.Ended(seen.Key()) || rec.Ended(AttemptKey("unseen", 1)) {
		t.Errorf("after 5 min: seen ended %v (want true, its grant lives 10 min), unseen %v (want false, expired)",
			rec.Ended(seen.Key()), rec.Ended(AttemptKey("unseen", 1)))
	}
	rec.End(AttemptKey("later", 1), now.Unix()+60) // prunes the expired
	if n := len(rec.ended.until); n != 2 {
		t.Errorf("%d ended grants kept, want 2 (the expired one pruned)", n)
	}

	e := endedGrants{until: map[string]int64{}}
	for i := range maxEnded {
		e.add(strconv.Itoa(i), now.Unix()+int64(1000+i), now)
	}
	e.add("one more", now.Unix()+5000, now)
	if len(e.until) != maxEnded || e.has("0", now) || !e.has("1", now) || !e.has("one more", now) {
		t.Errorf("%d kept; nearest dropped %v; want %d and only the nearest dropped", len(e.until), !e.has("0", now), maxEnded)
	}
}
