package notify

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/approvalevents"
)

// A card's text is rendered over what the agent wrote (its arguments, through the Tool's
// presentation): receivers show it to people as it is, so it leaves escaped.
func TestCardsLeaveEscaped(t *testing.T) {
	n := newTestNotifier(t, "https://127.0.0.1:1/", nil)
	ev := event()
	ev.Data.Card = "$ ls -l /tmp; \u202eexe.sh\u202c\x1b]52;c;eA==\x07\nfake: line"
	ev.Data.Message = "asks\u200b\x1b[2J"
	ev.Data.Requester = "mallory\u2066"
	n.Notify(context.Background(), ev)
	d, _ := n.queue.Get()
	got, err := approvalevents.Decode(d.body)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`$ ls -l /tmp; \u202eexe.sh\u202c\x1b]52;c;eA==\x07\nfake: line`,
		`asks\u200b\x1b[2J`,
		`mallory\u2066`,
	}
	if diff := cmp.Diff(want, []string{got.Data.Card, got.Data.Message, got.Data.Requester}); diff != "" {
		t.Errorf("card, message, requester (-want +got):\n%s", diff)
	}
}

func TestCardsStayWithinTheirBound(t *testing.T) {
	n := newTestNotifier(t, "https://127.0.0.1:1/", nil)
	ev := event()
	ev.Data.Card = strings.Repeat("\u202e", pipeline.MaxPresentBytes/3) // 4 KiB that escape to 12 KiB
	n.Notify(context.Background(), ev)
	d, _ := n.queue.Get()
	got, err := approvalevents.Decode(d.body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data.Card) > pipeline.MaxPresentBytes || !strings.HasSuffix(got.Data.Card, "more bytes]") {
		t.Errorf("card of %d bytes, ending %q", len(got.Data.Card), got.Data.Card[max(len(got.Data.Card)-40, 0):])
	}
}
