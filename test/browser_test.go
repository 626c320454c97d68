package test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	osexec "os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// browser is Debian's headless Chromium driven through the DevTools
// protocol: navigate, evaluate JavaScript in the page, take screenshots.
// A page that keeps a blocking query open never finishes "loading", so
// tests wait on the page's own state instead of on load events.
type browser struct {
	t    *testing.T
	ws   *websocket.Conn
	next int
}

// startBrowser starts Chromium with a throwaway profile and connects to
// its first page. As root it needs --no-sandbox; the cluster's TLS
// certificate is from the cluster's own CA, which the profile does not
// know, hence --ignore-certificate-errors.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := osexec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium (Debian's package, installed by .ci/run): %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := osexec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--ignore-certificate-errors", "--user-data-dir="+t.TempDir(), "--window-size=1280,1000",
		"--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	// Chromium prints where its DevTools endpoint listens.
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)
		sent := false
		for sc.Scan() { // until Chromium exits (cleanup): drains its stderr
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		close(found)
	}()
	var hostport string
	select {
	case h, ok := <-found:
		if !ok {
			t.Fatal("chromium exited before its DevTools endpoint listened")
		}
		hostport = h
	case <-time.After(30 * time.Second):
		t.Fatal("chromium's DevTools endpoint: not within 30s")
	}

	var targets []struct {
		Type, WebSocketDebuggerURL string
	}
	eventually(t, 10*time.Second, "chromium's page target", func() error {
		resp, err := http.Get("http://" + hostport + "/json/list")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
			return err
		}
		for _, tg := range targets {
			if tg.Type == "page" {
				return nil
			}
		}
		return fmt.Errorf("no page among %d targets", len(targets))
	})
	var pageURL string
	for _, tg := range targets {
		if tg.Type == "page" {
			pageURL = tg.WebSocketDebuggerURL
			break
		}
	}
	ws, err := websocket.Dial(pageURL, "", "http://"+hostport)
	if err != nil {
		t.Fatalf("connect to the page: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	return &browser{t: t, ws: ws}
}

// call sends one DevTools command and returns its result, skipping the
// events that arrive meanwhile.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	b.next++
	id := b.next
	if err := b.ws.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		b.t.Fatal(err)
	}
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	for range 10000 {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			b.t.Fatalf("%s: %v", method, err)
		}
		if msg.ID != id {
			continue // an event
		}
		if msg.Error != nil {
			b.t.Fatalf("%s: %s", method, msg.Error.Message)
		}
		return msg.Result
	}
	b.t.Fatalf("%s: no answer among 10000 messages", method)
	return nil
}

func (b *browser) navigate(url string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]string{"url": url})
}

// eval evaluates a JavaScript expression in the page and returns its
// value as a string.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	raw := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		b.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		b.t.Fatalf("evaluate %q: %s", expr, r.ExceptionDetails.Text)
	}
	if r.Result.Value == nil {
		return ""
	}
	return fmt.Sprint(r.Result.Value)
}

// waitText waits until the page's text contains every one of want, and
// returns the text.
func (b *browser) waitText(what string, timeout time.Duration, want ...string) string {
	b.t.Helper()
	var text string
	eventually(b.t, timeout, what, func() error {
		text = b.eval("document.body ? document.body.innerText : ''")
		for _, w := range want {
			if !strings.Contains(text, w) {
				return fmt.Errorf("%q not on the page:\n%.1500s", w, text)
			}
		}
		return nil
	})
	return text
}

// screenshot returns a PNG of the page.
func (b *browser) screenshot() []byte {
	b.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(b.call("Page.captureScreenshot", map[string]string{"format": "png"}), &r); err != nil {
		b.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}
