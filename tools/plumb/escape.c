/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * escape.c - bytes from Redis (keys, values, client names) printed so a
 * terminal or a JSON reader takes them safely: quoted with C escapes for
 * people, or as a JSON string.  status, break, survey and watch share it.
 */
#include <stdio.h>

#include "cli.h"

int cli_print_quoted(const char *p, size_t len, size_t max)
{
    size_t i;

    putchar('"');
    for (i = 0; i < len && (max == 0 || i < max); i++) {
        unsigned char c = (unsigned char)p[i];

        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    return i < len;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_length(const unsigned char *p, size_t n)
{
    size_t want, i;

    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        want = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        want = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        want = 4;
    else
        return 0;
    if (want > n)
        return 0;
    for (i = 1; i < want; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return want;
}

/*
 * Redis strings are bytes: control characters and quotes are escaped,
 * valid UTF-8 passes through, and a byte that is not UTF-8 becomes U+FFFD
 * so the line stays valid JSON.  With script_safe, '<', '>' and '&' are
 * escaped too, so no value can close the HTML script element the JSON
 * sits in (the classroom page).
 */
void cli_write_json_string(FILE *f, const char *s, size_t len, int script_safe)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, n;

    fputc('"', f);
    while (i < len) {
        if (p[i] == '"' || p[i] == '\\') {
            fprintf(f, "\\%c", p[i++]);
        } else if (p[i] < 0x20 || p[i] == 0x7f
                   || (script_safe
                       && (p[i] == '<' || p[i] == '>' || p[i] == '&'))) {
            fprintf(f, "\\u%04x", p[i++]);
        } else if (p[i] < 0x80) {
            fputc(p[i++], f);
        } else if ((n = utf8_length(p + i, len - i)) == 0) {
            fputs("\\ufffd", f);
            i++;
        } else {
            fwrite(p + i, 1, n, f);
            i += n;
        }
    }
    fputc('"', f);
}

void cli_print_json_string(const char *s, size_t len)
{
    cli_write_json_string(stdout, s, len, 0);
}
