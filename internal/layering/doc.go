// Package layering holds no code: its test keeps the packages' arrows pointing down
// (docs/architecture.md, "Packages and their arrows"), so a back edge fails `make test`.
package layering
