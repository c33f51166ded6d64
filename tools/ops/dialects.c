/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dialects.c - tslock dialects: the legacy stamp dialects the library
 * knows, each with its format string and the library it matches, as the
 * library itself lists them (never a copy kept here).  --json prints one
 * object a line.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_dialects(const struct cli_options *o)
{
    size_t i;
    const char *name;

    if (!o->survey_json)
        printf("%-20s %-44s %s\n", "PRESET", "FORMAT", "LIBRARY");
    for (i = 0; (name = tslock_dialect_preset(i)) != NULL; i++) {
        const char *format = tslock_dialect_format(name),
                   *library = tslock_dialect_library(name);
        if (!o->survey_json) {
            printf("%-20s %-44s %s\n", name, format, library);
            continue;
        }
        fputs("{\"preset\":", stdout);
        cli_print_json_string(name, strlen(name));
        fputs(",\"format\":", stdout);
        cli_print_json_string(format, strlen(format));
        fputs(",\"library\":", stdout);
        cli_print_json_string(library, strlen(library));
        fputs("}\n", stdout);
    }
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_OSERR;
}
