// Package routes is the gateway's route table: for each application
// service, the HTTP routes and WebSocket requests that reach it, one file
// per service. Handlers here bind a request (gateway/api), call the
// service as the authenticated user, and write its answer; the rules live
// in the services.
package routes

import (
	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/ws"
)

// HTTP registers HTTP routes (gateway.Server); authenticated routes run
// behind the token check and find the caller with auth.ClaimsOf.
type HTTP interface {
	Route(method, path string, handler app.HandlerFunc, authenticated bool)
}

// WS registers WebSocket request handlers by req_identifier (ws.Server).
type WS interface {
	Handle(reqIdentifier int, h ws.HandlerFunc)
}
