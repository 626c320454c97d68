// Package ui owns the read-only web view every agent serves at /ui: a
// page, a script and a style sheet embedded in the binary (no build step,
// no third-party script). The files carry no cluster data: the script
// reads the HTTP API with the user's token (bearer credentials, kept in
// the tab's sessionStorage) and follows it with blocking queries, so the
// view is live and sees exactly what the user may see through the CLI.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Prefix is where the view is served.
const Prefix = "/ui/"

// Handler serves the view under Prefix; /ui redirects to it.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		// The directory is embedded at build time: it is there.
		panic("ui: embedded files: " + err.Error())
	}
	fileServer := http.StripPrefix(Prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Only these files run: no inline script, no other origin, and
		// the token never leaves in a Referer.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/ui" {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		fileServer.ServeHTTP(w, r)
	})
}
