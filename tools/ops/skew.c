/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * skew.c - how far a clock seems off the server's: this host's, read by
 * TIME (Redis 2.6+) for status and survey; and a stamp writer's, judged
 * from a MONITOR line by watch.  The threshold and the wording live here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "cli.h"

int cli_raw_clock_offset(struct redisContext *ctx, int64_t *offset_ms)
{
    int64_t sent = cli_wall_ms(), received, server;
    redisReply *r = cli_raw_command(ctx, "TIME");
    int ok;

    received = cli_wall_ms();
    ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2
         && r->element[0]->type == REDIS_REPLY_STRING
         && r->element[1]->type == REDIS_REPLY_STRING;
    if (ok) {
        /* The server read its clock about halfway through the trip. */
        server = (int64_t)strtoll(r->element[0]->str, NULL, 10) * 1000
                 + strtoll(r->element[1]->str, NULL, 10) / 1000;
        *offset_ms = server - (sent + received) / 2;
    }
    freeReplyObject(r);
    return ok;
}

void cli_print_clock_offset(int have, int64_t offset_ms)
{
    if (!have) {
        printf("clock: the server has no TIME (before Redis 2.6): no offset "
               "from its clock can be read\n");
        return;
    }
    /* offset is the server's clock minus ours: positive, ours is behind. */
    printf("clock: this host's clock is %" PRId64 " ms %s the server's "
           "(TIME)\n",
           offset_ms < 0 ? -offset_ms : offset_ms,
           offset_ms <= 0 ? "ahead of" : "behind");
}

void cli_print_clock_offset_json(int have, int64_t offset_ms)
{
    /* The same sign as the line: positive when this host runs ahead. */
    if (have)
        printf("\"clock_ahead_ms\":%" PRId64 ",\"clock_source\":\"TIME\"",
               -offset_ms);
    else
        fputs("\"clock_ahead_ms\":null,\"clock_source\":null", stdout);
}

/*
 * The writer of stamp expires_ms at server time at_ms (the MONITOR
 * line's), over the value that ended at prior_ms (0: none or not a
 * stamp), by a takeover (GETSET, or a script or transaction that replaces
 * a stamp) or not.  Any honest writer's stamp lies ahead of its clock by
 * its lease, and a takeover comes only once the prior stamp has passed by
 * the taker's clock; so:
 *   a stamp already past at_ms: its clock is at least at_ms - stamp behind;
 *   a takeover of a stamp still live at at_ms: at least prior - at_ms ahead;
 *   a stamp more than CLI_SKEW_MAX_LEASE_MS ahead: at least the excess
 *   ahead (no plausible lease is longer).
 * Within CLI_SKEW_THRESHOLD_MS (whole-second stamps, network time) nothing
 * is said.  Returns 1 with *ahead_ms (negative: behind) and *why, or 0.
 */
int cli_writer_skew(int64_t expires_ms, int64_t at_ms, int64_t prior_ms,
                    int takeover, int64_t *ahead_ms, const char **why)
{
    if (expires_ms + CLI_SKEW_THRESHOLD_MS < at_ms) {
        *ahead_ms = expires_ms - at_ms;
        *why = "stamp already expired when written";
        return 1;
    }
    if (takeover && prior_ms != 0 && prior_ms > at_ms + CLI_SKEW_THRESHOLD_MS) {
        *ahead_ms = prior_ms - at_ms;
        *why = "took over a stamp the server's clock calls live";
        return 1;
    }
    if (expires_ms > at_ms + CLI_SKEW_MAX_LEASE_MS + CLI_SKEW_THRESHOLD_MS) {
        *ahead_ms = expires_ms - at_ms - CLI_SKEW_MAX_LEASE_MS;
        *why = "stamp further ahead than any plausible lease";
        return 1;
    }
    return 0;
}
