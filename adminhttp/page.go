package adminhttp

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

// webFiles are the status page's HTML, CSS and JavaScript, served as they
// are: there is no build step.
//
//go:embed web
var webFiles embed.FS

// contentTypes are the types of the files under web/.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// pageSecurity forbids the page everything but this daemon's own files and
// /v1/deployment: no external resources, no inline scripts or styles.
const pageSecurity = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveWebFile writes one embedded file, or 404.
func serveWebFile(w http.ResponseWriter, r *http.Request, name string) {
	data, err := fs.ReadFile(webFiles, path.Join("web", name))
	ctype, known := contentTypes[path.Ext(name)]
	if err != nil || !known {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	// The files change with the binary: revalidate rather than cache.
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", pageSecurity)
	_, _ = w.Write(data)
}

// page serves the status page itself.
func (a *Server) page(w http.ResponseWriter, r *http.Request) {
	serveWebFile(w, r, "index.html")
}

// asset serves the page's CSS and JavaScript under /web/.
func (a *Server) asset(w http.ResponseWriter, r *http.Request) {
	serveWebFile(w, r, r.PathValue("file"))
}
