// A gRPC ext_authz client built from Envoy's published API (go-control-plane), standing in for
// Envoy's own ext_authz filter: it sends CheckRequests as Envoy does and prints every
// CheckResponse as one JSON line, so the tests hold the decision service to the real contract.
//
//	ext-authz-client -addr 127.0.0.1:9191 -n 30 -interval 500ms -path /hello -header user-id=alice
//
// With -load it is the benchmark's gRPC load generator instead: Checks for that long from
// -concurrency callers (at -rate per second in all, or as fast as answered with 0), the key
// header -rotate-key taking 1000 values in turn, and one JSON summary line.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ",") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// One answer as the tests read it.
type result struct {
	Code            int32             `json:"code"`
	Allowed         bool              `json:"allowed"`
	HTTPStatus      int32             `json:"httpStatus,omitempty"`
	Headers         map[string]string `json:"headers"`
	ResponseHeaders map[string]string `json:"responseHeaders,omitempty"`
	HeadersToRemove []string          `json:"headersToRemove,omitempty"`
	Body            string            `json:"body,omitempty"`
	Error           string            `json:"error,omitempty"`
}

func headerMap(opts []*corev3.HeaderValueOption) map[string]string {
	m := map[string]string{}
	for _, o := range opts {
		h := o.GetHeader()
		v := h.GetValue()
		if v == "" && len(h.GetRawValue()) > 0 {
			v = string(h.GetRawValue())
		}
		m[strings.ToLower(h.GetKey())] = v
	}
	return m
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9191", "decision service gRPC address")
	n := flag.Int("n", 1, "requests to send")
	interval := flag.Duration("interval", 0, "pause between requests")
	method := flag.String("method", "GET", "the original request's method")
	path := flag.String("path", "/", "the original request's path (with query)")
	host := flag.String("host", "service.example", "the original request's authority")
	var headers headerList
	flag.Var(&headers, "header", "name=value of the original request (repeatable)")
	load := flag.Duration("load", 0, "benchmark: send Checks for this long and print a summary")
	concurrency := flag.Int("concurrency", 16, "benchmark: concurrent callers")
	rate := flag.Float64("rate", 0, "benchmark: Checks per second in all (0: as fast as answered)")
	rotateKey := flag.String("rotate-key", "user-id", "benchmark: the header whose value rotates over 1000 users")
	flag.Parse()

	// Envoy's HTTP/2 windows (256 MiB, its default): set, they also turn off grpc-go's bandwidth
	// probing, a PING after each response that Envoy never sends and the server must answer.
	const envoyWindow = 256 << 20
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(envoyWindow), grpc.WithInitialConnWindowSize(envoyWindow))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	hdrs := map[string]string{":authority": *host, ":method": *method, ":path": *path}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, "=")
		hdrs[strings.ToLower(name)] = value
	}
	out := json.NewEncoder(os.Stdout)
	if *load > 0 {
		runLoad(client, hdrs, *method, *path, *host, *load, *concurrency, *rate, *rotateKey, out)
		return
	}
	for i := 0; i < *n; i++ {
		if i > 0 {
			time.Sleep(*interval)
		}
		req := &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
			Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
				Id: fmt.Sprint(i), Method: *method, Path: *path, Host: *host, Scheme: "http", Protocol: "HTTP/1.1", Headers: hdrs,
			}},
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := client.Check(ctx, req)
		cancel()
		r := result{Headers: map[string]string{}}
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Code = resp.GetStatus().GetCode()
			r.Allowed = r.Code == 0
			if ok := resp.GetOkResponse(); ok != nil {
				r.Headers = headerMap(ok.GetHeaders())
				r.ResponseHeaders = headerMap(ok.GetResponseHeadersToAdd())
				r.HeadersToRemove = ok.GetHeadersToRemove()
			}
			if d := resp.GetDeniedResponse(); d != nil {
				r.HTTPStatus = int32(d.GetStatus().GetCode())
				r.Headers = headerMap(d.GetHeaders())
				r.Body = d.GetBody()
			}
		}
		if err := out.Encode(r); err != nil {
			os.Exit(2)
		}
	}
}

// runLoad sends Checks for d from c callers and prints {sent, ok, denied, errors, elapsedUs, achievedRate}.
func runLoad(client authv3.AuthorizationClient, base map[string]string, method, path, host string, d time.Duration, c int, rate float64, key string, out *json.Encoder) {
	var next, ok, denied, errs int64
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(c) / rate)
	}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			due := start.Add(time.Duration(w) * interval / time.Duration(c))
			for time.Now().Before(deadline) {
				if interval > 0 {
					time.Sleep(time.Until(due))
					due = due.Add(interval)
				}
				i := atomic.AddInt64(&next, 1)
				hdrs := make(map[string]string, len(base)+1)
				for k, v := range base {
					hdrs[k] = v
				}
				hdrs[key] = fmt.Sprintf("user-%d", i%1000)
				req := &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
					Http: &authv3.AttributeContext_HttpRequest{Method: method, Path: path, Host: host, Headers: hdrs},
				}}}
				resp, err := client.Check(context.Background(), req)
				switch {
				case err != nil:
					atomic.AddInt64(&errs, 1)
				case resp.GetStatus().GetCode() == 0:
					atomic.AddInt64(&ok, 1)
				default:
					atomic.AddInt64(&denied, 1)
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	done := ok + denied
	_ = out.Encode(map[string]any{"sent": next, "ok": ok, "denied": denied, "errors": errs, "elapsedUs": elapsed.Microseconds(), "achievedRate": float64(done) / elapsed.Seconds()})
}
