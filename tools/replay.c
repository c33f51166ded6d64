/*
 * replay.c - the replay form: narrates one race of doc/races.md against
 * the server, step by step, with the broken scheme and tslock side by
 * side.  The scenarios themselves are the shared table in races.c.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "cli.h"
#include "races.h"

struct narration {
    const struct cli_options *o;
    int step;
    int failed; /* a connection could not be made */
};

/* A raw connection with the URL's AUTH and SELECT, or NULL. */
static redisContext *replay_raw(void *ud)
{
    struct narration *n = ud;
    const struct cli_url *u = &n->o->url;
    struct timeval tv = {n->o->timeout_ms / 1000,
                         (n->o->timeout_ms % 1000) * 1000};
    redisContext *c = u->is_unix
                          ? redisConnectUnixWithTimeout(u->host, tv)
                          : redisConnectWithTimeout(u->host, u->port, tv);

    if (c == NULL || c->err) {
        cli_error("cannot connect: %s", c != NULL ? c->errstr : "no memory");
        redisFree(c);
        n->failed = 1;
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (u->password != NULL && u->user != NULL)
        freeReplyObject(redisCommand(c, "AUTH %s %s", u->user, u->password));
    else if (u->password != NULL)
        freeReplyObject(redisCommand(c, "AUTH %s", u->password));
    if (u->db != 0)
        freeReplyObject(redisCommand(c, "SELECT %d", u->db));
    return c;
}

static tslock_client *replay_client(void *ud)
{
    struct narration *n = ud;
    tslock_client *c = NULL;

    if (cli_connect(n->o, &c) != CLI_EXIT_OK)
        n->failed = 1;
    return c;
}

static void replay_narrate(const char *actor, const char *command,
                           const char *value, void *ud)
{
    struct narration *n = ud;

    printf("  %2d. %-6s %-18s -> %s\n", ++n->step, actor, command, value);
}

/*
 * Run one side with its own narration; 0 when it ran and ended with the
 * documented number of holders.
 */
static int replay_side(const race *r, int broken, struct narration *n,
                       race_result *res)
{
    race_env env = {replay_raw, replay_client, replay_narrate, n, 0, 0};
    char key[64];

    env.wall_ms = cli_wall_ms();
    env.mono_ms = cli_mono_ms();
    snprintf(key, sizeof(key), "tslock:replay:%s", r->id);
    n->step = 0;
    printf("%s (%s), on %s:\n", broken ? "broken" : "tslock",
           broken ? r->broken : r->fixed, key);
    if ((broken ? r->run_broken : r->run_tslock)(&env, key, res) != 0
        || n->failed)
        return -1;
    return race_holders(res) == (broken ? r->broken_holders : r->tslock_holders)
               ? 0
               : 1;
}

static int replay_list(void)
{
    size_t i;

    for (i = 0; i < n_races; i++)
        printf("%s  %s: %s vs tslock %s\n", races[i].id, races[i].title,
               races[i].broken, races[i].fixed);
    return CLI_EXIT_OK;
}

int cli_replay(const struct cli_options *o, const char *id, int list)
{
    struct narration n = {o, 0, 0};
    race_result bad, good;
    char v1[128], v2[128];
    const race *r;
    int rb, rt;

    if (list)
        return replay_list();
    if ((r = race_find(id)) == NULL)
        return cli_usage_error("no race '%s' to replay (tslock replay --list)",
                               id);
    printf("race %s: %s\n", r->id, r->title);
    rb = replay_side(r, 1, &n, &bad);
    if (rb < 0)
        return CLI_EXIT_UNAVAILABLE;
    rt = replay_side(r, 0, &n, &good);
    if (rt < 0)
        return CLI_EXIT_UNAVAILABLE;
    race_verdict(r, &bad, v1, sizeof(v1));
    race_verdict(r, &good, v2, sizeof(v2));
    printf("verdict:\n  broken (%s): %s\n  tslock (%s): %s\n", r->broken, v1,
           r->fixed, v2);
    if (rb != 0 || rt != 0) {
        cli_error("race %s did not end as doc/races.md documents", r->id);
        return CLI_EXIT_SOFTWARE;
    }
    return CLI_EXIT_OK;
}
