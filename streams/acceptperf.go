package streams

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithAcceptPerfLog makes every Accept write one info line to log
// (log.accept_perf): see acceptPerf.
func WithAcceptPerfLog(log *slog.Logger) AcceptOption {
	return func(o *acceptOptions) { o.perfLog = log }
}

// acceptPerf writes the accept step's per-send line, "accept perf":
// write_ms, the accept script call that answered (with the replica wait,
// when on); accept_ms, the whole Accept (lease refills included: the
// frame's arrival and the ACK's write are the caller's, so this is the
// part of the ACK's latency the accept step owns); and stream_len and
// pending, XLEN and the XPENDING count of the shard's stream of the
// message's first stage, read after the timings in one pipelined round
// trip. Besides: server_msg_id, conversation_id, seq, shard, stream,
// status (ok or dup) and append (false: the synchronous path, which
// appends nothing). nil (the option not given) writes nothing.
type acceptPerf struct {
	rdb  redis.UniversalClient
	keys Keys
	log  *slog.Logger
}

func newAcceptPerf(rdb redis.UniversalClient, keys Keys, log *slog.Logger) *acceptPerf {
	if log == nil {
		return nil
	}
	return &acceptPerf{rdb: rdb, keys: keys, log: log}
}

// start returns the time a measured span starts: zero when off, so the
// hot path pays for no clock read.
func (p *acceptPerf) start() time.Time {
	if p == nil {
		return time.Time{}
	}
	return time.Now()
}

// write logs the line of one send (see acceptPerf). write and total are
// the spans' start times.
func (p *acceptPerf) write(ctx context.Context, req *AcceptRequest, acc Accepted, write, total time.Time) {
	if p == nil {
		return
	}
	writeMS, acceptMS := ms(time.Since(write)), ms(time.Since(total))
	stream, group := p.keys.ToSave(acc.Shard), p.keys.SaveGroup()
	if req.Route == DeliverFirst {
		stream, group = p.keys.ToDeliver(acc.Shard), p.keys.DeliverGroup()
	}
	pipe := p.rdb.Pipeline()
	n := pipe.XLen(ctx, stream)
	pending := pipe.XPending(ctx, stream, group)
	_, err := pipe.Exec(ctx)
	status := "ok"
	if acc.Duplicate {
		status = "dup"
	}
	attrs := []slog.Attr{
		slog.String("server_msg_id", acc.ServerMsgID), slog.String("conversation_id", req.Msg.ConversationID),
		slog.Int64("seq", acc.Seq), slog.Int("shard", acc.Shard), slog.String("status", status), slog.Bool("append", req.Append),
		slog.Float64("write_ms", writeMS), slog.Float64("accept_ms", acceptMS),
		slog.String("stream", stream), slog.Int64("stream_len", n.Val()),
	}
	if sum, perr := pending.Result(); perr == nil {
		attrs = append(attrs, slog.Int64("pending", sum.Count))
	}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	p.log.LogAttrs(ctx, slog.LevelInfo, "accept perf", attrs...)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
