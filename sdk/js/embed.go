// Package sdkjs embeds the JavaScript SDK's ES modules (src/*.js) so that
// the server can serve them to browsers as they are, with no build step:
// web.Register mounts them at /assets/sdk/{file}, and the web client
// imports them from there (docs/sdk.md).
package sdkjs

import "embed"

// Src holds src/*.js: the SDK's modules, the same files npm publishes.
//
//go:embed src/*.js
var Src embed.FS
