/*
 * tslock.c - the tslock command (placeholder until the CLI lands).
 */
#include <stdio.h>

#include <tslock.h>

int main(void)
{
    printf("tslock %s\n", tslock_version());
    return 0;
}
