// Package ws is Nexo's WebSocket gateway: the handshake (token checked before
// the upgrade), one session per connection (a read loop that handles requests
// in arrival order and a write loop that writes what is queued), the frame codec
// and dispatch table, the connection registry that pushes reach users
// through, login policy, heartbeats, back-pressure and per-user rate limits.
//
// docs/protocol.md describes the frames; docs/gateway.md the measured costs.
//
// Concurrency: one goroutine at a time writes to a connection (the writing
// flag): its write loop, which drains the bounded queue every push goes
// through, or its reader answering a request while nothing is queued
// (Conn.reply), so writes never race and frames keep their order;
// publishers (PushToUser and friends) never block on a slow connection,
// they close it instead.
package ws
