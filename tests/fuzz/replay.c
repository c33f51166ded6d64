/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.c - a plain main() for the fuzz targets, built with the normal
 * compiler: it feeds every file named (or found in a directory named) to
 * LLVMFuzzerTestOneInput once, so make check replays the corpora where
 * clang's libFuzzer is missing.  A violated property aborts as it would
 * under libFuzzer.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data = NULL;
    long size;
    int rc = -1;

    if (f == NULL)
        goto out;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0)
        goto out;
    /* An exact-size copy, so a read past the end is caught by ASan. */
    data = malloc(size > 0 ? (size_t)size : 1);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size)
        goto out;
    LLVMFuzzerTestOneInput(data, (size_t)size);
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "replay: cannot read %s\n", path);
    free(data);
    if (f != NULL)
        fclose(f);
    return rc;
}

/* Every regular file in dir, in readdir's order. */
static int replay_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    int rc = 0;

    if (d == NULL) {
        fprintf(stderr, "replay: cannot open %s\n", dir);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (replay_file(path) != 0)
            rc = -1;
        else
            (*count)++;
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    struct stat st;
    int i, count = 0, rc = 0;

    for (i = 1; i < argc; i++) {
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (replay_dir(argv[i], &count) != 0)
                rc = 1;
        } else if (replay_file(argv[i]) != 0) {
            rc = 1;
        } else {
            count++;
        }
    }
    printf("replayed %d input%s\n", count, count == 1 ? "" : "s");
    return rc;
}
