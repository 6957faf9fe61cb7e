// loadgen: the constant-rate (open-model) load generator of `make bench`, in the manner of wrk2.
// Debian has wrk (closed model: each connection sends when the previous answer arrived, so a slow
// server is offered less load and its latency looks better than it is) but no wrk2. This program
// sends request i at start + i/rate and measures each latency from that intended time, so time a
// request spent waiting for a free connection counts (no coordinated omission).
//
//	loadgen rate -addr 127.0.0.1:8080 -path /healthcheck/ready -H 'USER-ID: u' -rate 2000 -duration 10s -connections 50
//	loadgen list -addr 127.0.0.1:9000 -file requests.jsonl -connections 16
//	loadgen rate ... -rotate users.txt   (request i also sends line i mod n: 'USER-ID: user-7')
//	loadgen rate ... -timeline t.txt     (one 'intended-send-Unix-µs latency-µs' line per request)
//
// `list` sends each request of a JSON-lines file exactly once (as fast as the connections allow),
// for measurements where every request must differ (one authorization code each).
// Both print one JSON summary line on stdout. Standard library only; HTTP/1.1 keep-alive.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

type listRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

type summary struct {
	Mode         string           `json:"mode"`
	Sent         int64            `json:"sent"`
	Completed    int64            `json:"completed"`
	Errors       int64            `json:"errors"`
	Dropped      int64            `json:"dropped"`
	Statuses     map[string]int   `json:"statuses"`
	ElapsedUs    int64            `json:"elapsedUs"`
	OfferedRate  float64          `json:"offeredRate,omitempty"`
	AchievedRate float64          `json:"achievedRate"`
	LatencyUs    map[string]int64 `json:"latencyUs"`
	FirstError   string           `json:"firstError,omitempty"`
	SampleBody   string           `json:"sampleNon2xxBody,omitempty"`
}

func buildRequest(method, addr, path string, headers map[string]string, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, addr)
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if body != "" || method == "POST" || method == "PUT" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return []byte(b.String())
}

// conn is one keep-alive connection, reopened when the server closes it.
type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
}

func (k *conn) do(req []byte) (int, string, error) {
	for attempt := 0; attempt < 2; attempt++ {
		if k.c == nil {
			c, err := net.DialTimeout("tcp", k.addr, 5*time.Second)
			if err != nil {
				return 0, "", err
			}
			k.c = c
			k.r = bufio.NewReaderSize(c, 16384)
		}
		k.c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := k.c.Write(req); err != nil {
			k.c.Close()
			k.c = nil
			continue
		}
		resp, err := http.ReadResponse(k.r, nil)
		if err != nil {
			k.c.Close()
			k.c = nil
			if attempt == 0 && (err == io.EOF || strings.Contains(err.Error(), "reset")) {
				continue // a keep-alive connection the server had closed
			}
			return 0, "", err
		}
		var body string
		if resp.StatusCode >= 300 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			body = string(b)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			k.c.Close()
			k.c = nil
		}
		return resp.StatusCode, body, nil
	}
	return 0, "", fmt.Errorf("connection closed twice")
}

type recorder struct {
	mu  sync.Mutex
	lat []int64
	// With -timeline: each completed request's intended send time (Unix µs), beside lat.
	sentAt     []int64
	keepSentAt bool
	statuses   map[string]int
	errors     int64
	firstError string
	sample     string
}

func (r *recorder) add(from time.Time, us int64, status int, body string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errors++
		if r.firstError == "" {
			r.firstError = err.Error()
		}
		return
	}
	r.lat = append(r.lat, us)
	if r.keepSentAt {
		r.sentAt = append(r.sentAt, from.UnixMicro())
	}
	r.statuses[fmt.Sprint(status)]++
	if status >= 300 && r.sample == "" {
		r.sample = body
	}
}

func writeTimeline(file string, sentAt, lat []int64) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i, at := range sentAt {
		fmt.Fprintf(w, "%d %d\n", at, lat[i])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func percentiles(lat []int64) map[string]int64 {
	out := map[string]int64{}
	if len(lat) == 0 {
		return out
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	at := func(q float64) int64 {
		i := int(q * float64(len(lat)))
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return lat[i]
	}
	var sum int64
	for _, v := range lat {
		sum += v
	}
	out["p50"], out["p90"], out["p99"], out["p999"] = at(0.5), at(0.9), at(0.99), at(0.999)
	out["max"], out["mean"] = lat[len(lat)-1], sum/int64(len(lat))
	return out
}

func parseHeaders(h headerList) map[string]string {
	m := map[string]string{}
	for _, line := range h {
		if i := strings.IndexByte(line, ':'); i > 0 {
			m[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
		}
	}
	return m
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "rate" && os.Args[1] != "list") {
		fmt.Fprintln(os.Stderr, "usage: loadgen rate|list [flags]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "host:port")
	path := fs.String("path", "/", "request target")
	method := fs.String("method", "GET", "method")
	rate := fs.Float64("rate", 1000, "requests per second (rate mode)")
	duration := fs.Duration("duration", 10*time.Second, "how long to send (rate mode)")
	connections := fs.Int("connections", 50, "keep-alive connections")
	file := fs.String("file", "", "JSON lines of {method,path,headers,body} (list mode)")
	limit := fs.Duration("limit", 0, "stop sending after this long (default: duration + 5s in rate mode, 120s in list mode)")
	timeline := fs.String("timeline", "", "file to write one 'intended-send-Unix-µs latency-µs' line per completed request, in completion order (to line slow requests up with other events)")
	rotate := fs.String("rotate", "", "file of 'Name: value' lines: request i also sends line i mod n (rate mode; one user after another)")
	var hdrs headerList
	fs.Var(&hdrs, "H", "header 'Name: value' (repeatable)")
	fs.Parse(os.Args[2:])

	var reqs [][]byte
	if mode == "list" {
		data, err := os.ReadFile(*file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var lr listRequest
			if err := json.Unmarshal([]byte(line), &lr); err != nil {
				fmt.Fprintln(os.Stderr, "bad line:", err)
				os.Exit(2)
			}
			reqs = append(reqs, buildRequest(lr.Method, *addr, lr.Path, lr.Headers, lr.Body))
		}
	} else if *rotate != "" {
		data, err := os.ReadFile(*rotate)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			reqs = append(reqs, buildRequest(*method, *addr, *path, parseHeaders(append(append(headerList{}, hdrs...), line)), ""))
		}
	} else {
		reqs = [][]byte{buildRequest(*method, *addr, *path, parseHeaders(hdrs), "")}
	}

	rec := &recorder{statuses: map[string]int{}, keepSentAt: *timeline != ""}
	var next, sent int64
	interval := time.Duration(float64(time.Second) / *rate)
	total := int64(len(reqs))
	if mode == "rate" {
		total = int64(float64(*duration) / float64(interval))
	}
	conns := make([]*conn, *connections)
	for i := range conns {
		conns[i] = &conn{addr: *addr}
	}
	stopAfter := *limit
	if stopAfter == 0 {
		stopAfter = 120 * time.Second
		if mode == "rate" {
			stopAfter = *duration + 5*time.Second
		}
	}
	var dropped int64
	start := time.Now()
	var lastDone atomic.Int64
	var wg sync.WaitGroup
	for _, k := range conns {
		wg.Add(1)
		go func(k *conn) {
			defer wg.Done()
			for {
				i := atomic.AddInt64(&next, 1) - 1
				if i >= total {
					return
				}
				if time.Since(start) > stopAfter {
					// Bounded in time whatever the target does: the rest is counted as dropped.
					atomic.AddInt64(&dropped, 1)
					continue
				}
				var from time.Time
				req := reqs[i%int64(len(reqs))]
				if mode == "rate" {
					from = start.Add(time.Duration(i) * interval)
					if d := time.Until(from); d > 0 {
						time.Sleep(d)
					}
				} else {
					req = reqs[i]
					from = time.Now()
				}
				atomic.AddInt64(&sent, 1)
				status, body, err := k.do(req)
				done := time.Now()
				lastDone.Store(int64(done.Sub(start)))
				rec.add(from, done.Sub(from).Microseconds(), status, body, err)
			}
		}(k)
	}
	wg.Wait()
	elapsed := time.Duration(lastDone.Load())
	if *timeline != "" {
		// Before percentiles(), which sorts lat in place.
		if err := writeTimeline(*timeline, rec.sentAt, rec.lat); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	s := summary{
		Mode:       mode,
		Sent:       sent,
		Completed:  int64(len(rec.lat)),
		Errors:     rec.errors,
		Dropped:    dropped,
		Statuses:   rec.statuses,
		ElapsedUs:  elapsed.Microseconds(),
		LatencyUs:  percentiles(rec.lat),
		FirstError: rec.firstError,
		SampleBody: rec.sample,
	}
	if mode == "rate" {
		s.OfferedRate = *rate
	}
	if elapsed > 0 {
		s.AchievedRate = float64(len(rec.lat)) / elapsed.Seconds()
	}
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
}
