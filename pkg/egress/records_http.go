package egress

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// maxPodBody bounds the JSON body of a POST …/pod.
const maxPodBody = 1 << 10

// NewRecordsHandler serves, to a bearer of RecordsToken(key), GET /records/<uid>/<attempt>
// (the attempt's Record as JSON; an empty record when the proxy saw nothing), POST
// /records/<uid>/<attempt>/end?until=<Unix seconds> (ends the attempt's grant until its
// signed expiry, then answers its final record, as Recorder.End) and POST
// /records/<uid>/<attempt>/pod with {"ip": "<the Pod's address>"} (binds the attempt's
// grant to it, as Recorder.Bind: 204, or 409 when bound to another address); and /healthz
// to anyone.
func NewRecordsHandler(key []byte, rec *Recorder) http.Handler {
	want := []byte("Bearer " + RecordsToken(key))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	authorized := func(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			attempt, err := strconv.ParseInt(r.PathValue("attempt"), 10, 32)
			if err != nil {
				http.Error(w, "attempt: want a number", http.StatusBadRequest)
				return
			}
			h(w, r, AttemptKey(r.PathValue("uid"), int32(attempt)))
		}
	}
	mux.HandleFunc("GET /records/{uid}/{attempt}", authorized(func(w http.ResponseWriter, _ *http.Request, key string) {
		record, _ := rec.Get(key)
		writeRecord(w, record)
	}))
	mux.HandleFunc("POST /records/{uid}/{attempt}/end", authorized(func(w http.ResponseWriter, r *http.Request, key string) {
		until, err := strconv.ParseInt(r.URL.Query().Get("until"), 10, 64)
		if err != nil || until <= 0 {
			http.Error(w, "until: want the grant's expiry in Unix seconds", http.StatusBadRequest)
			return
		}
		writeRecord(w, rec.End(key, until))
	}))
	mux.HandleFunc("POST /records/{uid}/{attempt}/pod", authorized(func(w http.ResponseWriter, r *http.Request, key string) {
		var body struct {
			IP string `json:"ip"`
		}
		err := json.NewDecoder(io.LimitReader(r.Body, maxPodBody)).Decode(&body)
		addr, perr := netip.ParseAddr(body.IP)
		if err != nil || perr != nil || addr.Zone() != "" || addr.IsUnspecified() {
			http.Error(w, `body: want {"ip": "<the Pod's IP address>"}`, http.StatusBadRequest)
			return
		}
		if err := rec.Bind(key, addr); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

func writeRecord(w http.ResponseWriter, record Record) {
	w.Header().Set("Content-Type", recordsContentType)
	_ = json.NewEncoder(w).Encode(record)
}

// RecordsURL is where the operator reads an attempt's record, below the proxy's base URL.
func RecordsURL(base, uid string, attempt int32) string {
	return strings.TrimSuffix(base, "/") + recordsPath + uid + "/" + strconv.Itoa(int(attempt))
}

// EndURL is where the operator ends an attempt's grant (expiring at until) and collects its
// final record, below the proxy's base URL.
func EndURL(base, uid string, attempt int32, until time.Time) string {
	return RecordsURL(base, uid, attempt) + "/end?until=" + strconv.FormatInt(until.Unix(), 10)
}

// PodURL is where the operator tells the proxy the address of the Pod an attempt runs
// in (POST, JSON {"ip": "…"}): from then on the attempt's grant works from that address
// only; before it, a request waits (bounded) for it.
func PodURL(base, uid string, attempt int32) string {
	return RecordsURL(base, uid, attempt) + "/pod"
}
