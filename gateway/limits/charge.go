package limits

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// chargeScript is GCRA (the cell rate algorithm redis_rate implements, on
// the same key and with the same stored value: the theoretical arrival
// time in seconds since 2017, by Redis's clock) with one difference:
// ARGV[4] events that were already admitted are charged whether or not
// they fit. redis_rate's AllowAtMost charges only what fits, so requests
// an instance admitted from memory beyond the budget were never paid for;
// here they put the subject in debt and it waits until the debt is paid.
// ARGV[5] (0 or 1) more events are then charged only if they fit.
//
// It returns {allowed, remaining, retry_after}: how many of ARGV[5] were
// charged, how many more would fit now (negative: the debt), and the
// seconds until the next one fits (0 when one fits now).
var chargeScript = redis.NewScript(`
redis.replicate_commands()
local key = KEYS[1]
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local charged = tonumber(ARGV[4])
local ask = tonumber(ARGV[5])

local emission = period / rate
local burst_offset = emission * burst
local t = redis.call("TIME")
local now = (t[1] - 1483228800) + (t[2] / 1000000)

local tat = tonumber(redis.call("GET", key) or now)
tat = math.max(tat, now) + emission * charged

-- fit: how many more events the budget holds now; below 0 it is in debt.
local fit = (now - tat + burst_offset) / emission
local allowed = 0
if ask > 0 and fit >= ask - 1e-6 then
  tat = tat + emission * ask
  fit = fit - ask
  allowed = ask
end
local ttl = tat - now
if ttl > 0 then
  redis.call("SET", key, tat, "EX", math.ceil(ttl))
end
local retry = 0
if fit < 1 - 1e-6 then
  retry = (1 - fit) * emission
end
return {allowed, math.floor(fit + 1e-6), tostring(retry)}
`)

// chargeResult is one answer of chargeScript.
type chargeResult struct {
	allowed    bool          // the asked event was charged
	remaining  int           // events that would still fit now; negative: debt
	retryAfter time.Duration // until the next event fits; 0: one fits now
}

// charge charges key (kind:subject) under rule with charged events that
// were already admitted, whether they fit or not, then asks for ask more
// (0 or 1), charged only if they fit. Errors are Redis's.
func (l *Limiter) charge(ctx context.Context, key string, rule Rule, charged, ask int) (chargeResult, error) {
	lim := rule.limit()
	v, err := chargeScript.Run(ctx, l.rdb, []string{"rate:" + l.prefix + key},
		lim.Burst, lim.Rate, lim.Period.Seconds(), charged, ask).Slice()
	if err != nil {
		return chargeResult{}, err
	}
	if len(v) != 3 {
		return chargeResult{}, fmt.Errorf("rate charge: %d values, want 3", len(v))
	}
	allowed, _ := v[0].(int64)
	remaining, _ := v[1].(int64)
	retry, _ := v[2].(string)
	secs, err := strconv.ParseFloat(retry, 64)
	if err != nil {
		return chargeResult{}, fmt.Errorf("rate charge: retry %q: %w", retry, err)
	}
	return chargeResult{allowed: allowed > 0, remaining: int(remaining), retryAfter: time.Duration(secs * float64(time.Second))}, nil
}
