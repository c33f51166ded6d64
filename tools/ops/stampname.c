/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stampname.c - what a stored value is, as the operator's tools (survey,
 * top, watch, the exporter) name it: the library's verdict
 * (tslock_value_name()), the same one every binding's survey gives.
 */
#include <string.h>

#include "cli.h"

int cli_stamp_name(const char *key, size_t key_len, const char *v, size_t len,
                   struct cli_stamp *out)
{
    tslock_value_kind kind = TSLOCK_VALUE_NOT_A_LOCK;

    memset(out, 0, sizeof(*out));
    if (v == NULL
        || tslock_value_name(key, key_len, v, len, &kind, &out->unit,
                             &out->expires_ms, out->dialect,
                             sizeof(out->dialect))
               != TSLOCK_OK)
        return out->kind;
    out->kind = kind == TSLOCK_VALUE_TOKEN           ? CLI_STAMP_TOKEN
                : kind == TSLOCK_VALUE_STAMP         ? CLI_STAMP_STAMP
                : kind == TSLOCK_VALUE_UNKNOWN_STAMP ? CLI_STAMP_UNKNOWN
                                                     : CLI_STAMP_NONE;
    return out->kind;
}
