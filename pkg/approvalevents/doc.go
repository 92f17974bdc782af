// Package approvalevents is the wire format of toolgate's approval notifications, for the
// operator that sends them and for receivers that verify them.
//
// When a ToolCall parks in AwaitingApproval, and when its approval is given, refused or
// expires, the operator POSTs one CloudEvent (CloudEvents 1.0, structured JSON mode,
// Content-Type application/cloudevents+json) to every sink configured for the call:
// the types are TypeRequested, TypeApproved, TypeDenied and TypeExpired, the subject is
// "<namespace>/<call>", the id is "<call uid>.<event>" (the same for every retry and every
// re-send, so receivers drop duplicates by source and id), and the data is a Data.
//
// Each request carries
//
//	X-Toolgate-Timestamp: <unix seconds when this attempt was signed>
//	X-Toolgate-Signature: sha256=<hex HMAC-SHA256(key, timestamp + "." + body)>
//
// where body is the exact request body. A receiver verifies with a Verifier holding the
// same key (the sink's Secret), which checks the MAC in constant time and refuses a
// timestamp more than Tolerance away from its clock, so a captured request cannot be
// replayed later; within that window, drop repeated ids.
//
//	v := approvalevents.Verifier{Keys: [][]byte{key}}
//	http.HandleFunc("/toolgate", func(w http.ResponseWriter, r *http.Request) {
//		n, err := v.Request(r)
//		if err != nil {
//			http.Error(w, "bad signature", http.StatusUnauthorized)
//			return
//		}
//		fmt.Println(n.Event.Type(), n.Data.Card, n.Data.ApproveCommand)
//	})
package approvalevents
