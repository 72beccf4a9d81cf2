// Package ws is Nexo's WebSocket gateway: the handshake (token checked before
// the upgrade), one session per connection (a read loop that handles requests
// in arrival order and a write loop that owns every write), the frame codec
// and dispatch table, the connection registry that pushes reach users
// through, login policy, heartbeats, back-pressure and per-user rate limits.
//
// docs/protocol.md describes the frames; docs/gateway.md the measured costs.
//
// Concurrency: every outbound frame of a connection goes through its bounded
// queue and is written by the single writer of that connection, so writes
// never race; publishers (PushToUser and friends) never block on a slow
// connection, they close it instead.
package ws
