// Gin's side of the differential test (tests/gin_diff.rs drives it).
//
// It reads route tables with their requests, one JSON object a line on
// stdin, and answers each with one JSON line on stdout: how the real Gin
// (the one this is built against) registered every route and answered
// every request. The first line out names Gin's version.
//
// Each table gets a fresh gin.New() with the table's switches. A route Gin
// refuses panics; the engine that panicked may be half changed, so it is
// rebuilt and the routes accepted so far are registered again (handwire
// promises that a refused route leaves the engine as it was). A request is
// read from its request line with net/http's ReadRequest, so URL.Path and
// URL.RawPath are what a Gin behind a real server sees, and a target
// net/http refuses is the 400 that server would answer.
//
// Build: GOPATH=/usr/share/gocode GO111MODULE=off go build (Debian's
// golang-github-gin-gonic-gin-dev).
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

type switches struct {
	RedirectTrailingSlash  bool `json:"redirect_trailing_slash"`
	RedirectFixedPath      bool `json:"redirect_fixed_path"`
	RemoveExtraSlash       bool `json:"remove_extra_slash"`
	UseRawPath             bool `json:"use_raw_path"`
	UnescapePathValues     bool `json:"unescape_path_values"`
	HandleMethodNotAllowed bool `json:"handle_method_not_allowed"`
}

type table struct {
	Switches switches    `json:"switches"`
	Routes   [][2]string `json:"routes"`   // method, path
	Requests [][2]string `json:"requests"` // method, request target
}

type answer struct {
	Status   int         `json:"status"`
	Location string      `json:"location,omitempty"`
	Allow    string      `json:"allow,omitempty"`
	Route    int         `json:"route"` // -1: no route's handler ran
	Params   [][2]string `json:"params"`
	Panic    string      `json:"panic,omitempty"`
	PanicAt  string      `json:"panic_at,omitempty"`
}

type result struct {
	Refused []string `json:"refused"` // "" for a route Gin accepted
	Answers []answer `json:"answers"`
}

// hit is what the route handler that ran saw: its route and c.Params.
var hit *answer

func main() {
	gin.SetMode(gin.ReleaseMode)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]string{"gin": gin.Version})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	for in.Scan() {
		var t table
		if err := json.Unmarshal(in.Bytes(), &t); err != nil {
			fmt.Fprintln(os.Stderr, "gin_diff: bad table:", err)
			os.Exit(2)
		}
		enc.Encode(run(t))
		out.Flush()
	}
}

func newEngine(s switches) *gin.Engine {
	e := gin.New()
	e.RedirectTrailingSlash = s.RedirectTrailingSlash
	e.RedirectFixedPath = s.RedirectFixedPath
	e.RemoveExtraSlash = s.RemoveExtraSlash
	e.UseRawPath = s.UseRawPath
	e.UnescapePathValues = s.UnescapePathValues
	e.HandleMethodNotAllowed = s.HandleMethodNotAllowed
	return e
}

func handler(route int) gin.HandlerFunc {
	return func(c *gin.Context) {
		hit = &answer{Route: route, Params: [][2]string{}}
		for _, p := range c.Params {
			hit.Params = append(hit.Params, [2]string{p.Key, text(p.Value)})
		}
		c.Status(http.StatusOK)
	}
}

// register adds a route; a panic is Gin refusing it, and its message.
func register(e *gin.Engine, method, path string, route int) (refused string) {
	defer func() {
		if r := recover(); r != nil {
			refused = fmt.Sprint(r)
		}
	}()
	e.Handle(method, path, handler(route))
	return ""
}

func run(t table) result {
	e := newEngine(t.Switches)
	res := result{Refused: []string{}, Answers: []answer{}}
	accepted := []int{}
	for i, r := range t.Routes {
		refused := register(e, r[0], r[1], i)
		res.Refused = append(res.Refused, refused)
		if refused == "" {
			accepted = append(accepted, i)
			continue
		}
		e = newEngine(t.Switches)
		for _, j := range accepted {
			register(e, t.Routes[j][0], t.Routes[j][1], j)
		}
	}
	for _, q := range t.Requests {
		res.Answers = append(res.Answers, serve(e, q[0], q[1]))
	}
	return res
}

// serve answers one request as Gin behind net/http's server would.
func serve(e *gin.Engine, method, target string) (a answer) {
	a = answer{Route: -1, Params: [][2]string{}}
	line := method + " " + target + " HTTP/1.1\r\nHost: gin.test\r\n\r\n"
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(line)))
	if err != nil {
		a.Status = http.StatusBadRequest
		return a
	}
	w := httptest.NewRecorder()
	hit = nil
	defer func() {
		if r := recover(); r != nil {
			a = answer{Route: -1, Params: [][2]string{}, Panic: fmt.Sprint(r)}
			a.PanicAt = panicAt(string(debug.Stack()))
		}
	}()
	e.ServeHTTP(w, req)
	if hit != nil {
		a.Route, a.Params = hit.Route, hit.Params
	}
	a.Status = w.Code
	a.Location = w.Header().Get("Location")
	a.Allow = w.Header().Get("Allow")
	return a
}

// panicAt names where in Gin a request panicked: the fixed-path search,
// the 405 look-up (gin.go:637 in 1.8.1) or the route's own look-up.
func panicAt(stack string) string {
	switch {
	case strings.Contains(stack, "findCaseInsensitivePath"):
		return "fixed-path"
	case strings.Contains(stack, "gin/gin.go:637"):
		return "405-lookup"
	case strings.Contains(stack, "gin/gin.go:609"):
		return "route-lookup"
	}
	return "elsewhere"
}

// text is a parameter value for JSON: as it is when it is UTF-8, else
// marked and in hex (encoding/json would replace the bytes).
func text(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return "\ufffdhex:" + hex.EncodeToString([]byte(v))
}
