/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_monitor.c - the MONITOR line parser that tslock watch, top and
 * the exporter share (tools/ops/watch.c), through its two entries:
 * cli_monitor_line (top's writers) and cli_monitor_legacy_write (the
 * exporter's legacy writes).  Whatever line the server, or something
 * posing as it, sends.
 *
 * Input: byte 0 chooses the form.  Even: the rest is one MONITOR line as
 * the status reply's bytes (not NUL-terminated).  Odd: the rest is a
 * command's arguments, split at each 0xff byte (the first is the client
 * address), which the target writes as Redis 7.0 writes a MONITOR line
 * (sdscatrepr: \" \\ \n \r \t \a \b, \xHH for the rest that is not
 * printable) and then parses: the command name must come back in lower
 * case and the key byte for byte, however binary.
 *
 * Properties: each entry returns what its declaration says and nothing
 * else; what it fills stays within the sizes given, NUL-terminated where
 * it is a string; the command name is lower case; a legacy write is an
 * SETNX, GETSET or SET outside a script and agrees with cli_monitor_line
 * on the key and the client; nothing crashes, reads past the line or
 * leaks.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../../tools/cli.h"
#include "fuzz.h"

#define KEY_SIZE 64 /* small, so keys longer than the buffer are met */
#define MAX_LINE (16 * 1024)

static int is_lower(const char *s)
{
    for (; *s != '\0'; s++)
        if (isupper((unsigned char)*s))
            return 0;
    return 1;
}

/* cli_monitor_line on text, with the buffers top gives it. */
static int check_line(const char *text, size_t len, char *client, char *command,
                      char *key, size_t *key_len)
{
    int rc;

    memset(client, 'c', 64);
    memset(command, 'm', 16);
    memset(key, 'k', KEY_SIZE);
    *key_len = (size_t)-1;
    rc = cli_monitor_line(text, len, client, 64, command, 16, key, KEY_SIZE,
                          key_len);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc != 0)
        return rc;
    FUZZ_CHECK(memchr(client, '\0', 64) != NULL);
    FUZZ_CHECK(memchr(command, '\0', 16) != NULL);
    FUZZ_CHECK(is_lower(command));
    FUZZ_CHECK(*key_len <= KEY_SIZE);
    return 0;
}

static void check_legacy(const char *text, size_t len)
{
    struct cli_legacy_write w;
    char client[64], command[16], key[KEY_SIZE];
    size_t key_len, n;
    int rc;

    memset(&w, 0x55, sizeof(w));
    rc = cli_monitor_legacy_write(text, len, &w);
    FUZZ_CHECK(rc == 0 || rc == 1);
    if (rc == 0)
        return;
    FUZZ_CHECK(w.key_len < sizeof(w.key) && w.key[w.key_len] == '\0');
    FUZZ_CHECK(memchr(w.client, '\0', sizeof(w.client)) != NULL);
    FUZZ_CHECK(strcmp(w.client, "lua") != 0);
    FUZZ_CHECK(check_line(text, len, client, command, key, &key_len) == 0);
    FUZZ_CHECK(strcmp(command, "setnx") == 0 || strcmp(command, "getset") == 0
               || strcmp(command, "set") == 0);
    n = key_len < w.key_len ? key_len : w.key_len;
    FUZZ_CHECK(memcmp(key, w.key, n) == 0);
    FUZZ_CHECK(strncmp(client, w.client, sizeof(client) - 1) == 0);
}

/* One argument as Redis's sdscatrepr writes it, quotes included. */
static size_t repr(char *out, const uint8_t *p, size_t n)
{
    size_t o = 0, i;

    out[o++] = '"';
    for (i = 0; i < n; i++) {
        switch (p[i]) {
        case '\\':
            o += (size_t)sprintf(out + o, "\\\\");
            break;
        case '"':
            o += (size_t)sprintf(out + o, "\\\"");
            break;
        case '\n':
            o += (size_t)sprintf(out + o, "\\n");
            break;
        case '\r':
            o += (size_t)sprintf(out + o, "\\r");
            break;
        case '\t':
            o += (size_t)sprintf(out + o, "\\t");
            break;
        case '\a':
            o += (size_t)sprintf(out + o, "\\a");
            break;
        case '\b':
            o += (size_t)sprintf(out + o, "\\b");
            break;
        default:
            if (isprint(p[i]))
                out[o++] = (char)p[i];
            else
                o += (size_t)sprintf(out + o, "\\x%02x", p[i]);
        }
    }
    out[o++] = '"';
    return o;
}

/*
 * The arguments of data written as a Redis 7.0 MONITOR line, parsed
 * back: the command in lower case and the key, byte for byte.
 */
static void round_trip(const uint8_t *data, size_t size)
{
    static char text[4 * MAX_LINE + 128];
    const uint8_t *end = data + size, *p = data, *cut;
    const uint8_t *arg[3] = {NULL, NULL, NULL};
    size_t arg_len[3] = {0, 0, 0}, o, n = 0, key_len, i;
    char client[64], command[16], key[KEY_SIZE], addr[48];
    size_t addr_len = 0;
    int rc;

    cut = memchr(p, 0xff, size);
    if (cut == NULL)
        return;
    /*
     * The client: "[0 ADDR]", ADDR as Redis writes it, unescaped: a Unix
     * socket's path may hold ']' and spaces (not '"', whose "] \"" would
     * end the client part).
     */
    o = (size_t)sprintf(text, "1700000000.123456 [0 ");
    for (; p < cut && p - data < 40; p++)
        if (*p != '"' && isprint(*p))
            addr[addr_len++] = (char)*p;
    addr[addr_len] = '\0';
    o += (size_t)sprintf(text + o, "%s]", addr);
    for (p = cut + 1; n < 3 && p <= end; n++) {
        cut = memchr(p, 0xff, (size_t)(end - p));
        arg[n] = p;
        arg_len[n] = (size_t)((cut != NULL ? cut : end) - p);
        text[o++] = ' ';
        o += repr(text + o, p, arg_len[n]);
        if (cut == NULL)
            break;
        p = cut + 1;
    }
    if (n < 3 && arg[n] != NULL)
        n++;
    rc = check_line(text, o, client, command, key, &key_len);
    check_legacy(text, o);
    if (n < 2)
        return; /* no key: -1 or not, the sizes were checked */
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(strcmp(client, addr) == 0);
    /* The name is a C string: it ends at a NUL, as no real one holds. */
    for (i = 0; i < arg_len[0] && i < 15 && arg[0][i] != '\0'; i++)
        FUZZ_CHECK(command[i] == (char)tolower(arg[0][i]));
    FUZZ_CHECK(command[i] == '\0');
    n = arg_len[1] < KEY_SIZE ? arg_len[1] : KEY_SIZE;
    FUZZ_CHECK(key_len == n && memcmp(key, arg[1], n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char client[64], command[16], key[KEY_SIZE];
    size_t key_len;

    if (size < 1 || size > MAX_LINE + 1)
        return 0;
    if (data[0] & 1) {
        round_trip(data + 1, size - 1);
        return 0;
    }
    check_line((const char *)data + 1, size - 1, client, command, key,
               &key_len);
    check_legacy((const char *)data + 1, size - 1);
    return 0;
}
