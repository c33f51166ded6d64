#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hold.sh - what a client does while it holds the lock (run by tslock as
# its COMMAND, or bare by the no-lock control): a read-modify-write of a
# counter on the checker's Redis, which is never partitioned.  The checker
# stamps every step with its own TIME, one clock for every client, so
# holds can be ordered afterwards (check.awk).  With FENCED=1 the checker
# is a fenced resource: it refuses a read or write whose fence
# ($TSLOCK_FENCE) is lower than the highest it has seen.
#
# Environment: CHK (checker address), CLIENT (a name), HOLD_S (seconds to
# hold between read and write), FENCED (0 or 1), TSLOCK_FENCE (tslock
# --fence; 0 without), HOLD_LOG (where the hold's start and end go).
set -u
fence=${TSLOCK_FENCE:-0}
# The client's own view for the history (history.awk): when the hold
# began and ended by this host's clock, written to $HOLD_LOG at exit.
# A client whose clock the nemesis jumped (libfaketime, worker.sh) passes
# it on; the history and the checker's steps keep the true clock.
unset LD_PRELOAD FAKETIME
started=$(date +%s%6N)
trap 'echo "$started $(date +%s%6N)" >"${HOLD_LOG:-/dev/null}"' EXIT

# KEYS: counter, highest fence, events.  ARGV: client, fence, fenced.
read_lua='
local t = redis.call("TIME")
local now = t[1] .. string.format("%06d", t[2])
local f = tonumber(ARGV[2])
redis.call("RPUSH", KEYS[3], now .. " enter " .. ARGV[1] .. " " .. f)
if ARGV[3] == "1" then
  local max = tonumber(redis.call("GET", KEYS[2]) or "0")
  if f < max then
    redis.call("RPUSH", KEYS[3], now .. " read-refused " .. ARGV[1] .. " " .. f)
    return "refused"
  end
  redis.call("SET", KEYS[2], f)
end
return redis.call("GET", KEYS[1]) or "0"'

# The same, and ARGV[4]: the value to write.
write_lua='
local t = redis.call("TIME")
local now = t[1] .. string.format("%06d", t[2])
local f = tonumber(ARGV[2])
local kind = "write-ok"
if ARGV[3] == "1" then
  local max = tonumber(redis.call("GET", KEYS[2]) or "0")
  if f < max then kind = "write-refused" else redis.call("SET", KEYS[2], f) end
end
if kind == "write-ok" then redis.call("SET", KEYS[1], ARGV[4]) end
redis.call("RPUSH", KEYS[3], now .. " " .. kind .. " " .. ARGV[1] .. " " .. f)
redis.call("RPUSH", KEYS[3], now .. " exit " .. ARGV[1] .. " " .. f)
return kind'

exit_lua='
local t = redis.call("TIME")
local now = t[1] .. string.format("%06d", t[2])
redis.call("RPUSH", KEYS[3], now .. " exit " .. ARGV[1] .. " " .. ARGV[2])
return "ok"'

cli() {
    redis-cli -h "$CHK" --raw "$@"
}
v=$(cli EVAL "$read_lua" 3 counter maxfence events "$CLIENT" "$fence" \
    "$FENCED") || exit 71
if [ "$v" = refused ]; then
    cli EVAL "$exit_lua" 3 counter maxfence events "$CLIENT" "$fence" \
        >/dev/null
    exit 0
fi
sleep "$HOLD_S"
cli EVAL "$write_lua" 3 counter maxfence events "$CLIENT" "$fence" \
    "$FENCED" $((v + 1)) >/dev/null || exit 71
