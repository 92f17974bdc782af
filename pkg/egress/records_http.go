package egress

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// NewRecordsHandler serves, to a bearer of RecordsToken(key), GET /records/<uid>/<attempt>
// (the attempt's Record as JSON; an empty record when the proxy saw nothing) and POST
// /records/<uid>/<attempt>/end?until=<Unix seconds> (ends the attempt's grant until its
// signed expiry, then answers its final record, as Recorder.End); and /healthz to anyone.
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
