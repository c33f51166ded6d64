/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hang_proof.c - a CUnit program with a planted hang, for
 * tests/check-hang-proof.sh: its one test starts a redis-server and a
 * child process, prints their pids, and then waits for something that
 * never comes.  The harness's watchdog must end it, naming the test.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static th_server srv;

static void test_planted_hang(void)
{
    pid_t child;

    CU_ASSERT_FATAL(th_server_start(&srv, NULL) == 0);
    child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        for (;;)
            pause();
    }
    printf("\nserver %d child %d\n", (int)srv.pid, (int)child);
    fflush(stdout);
    /* A wait without a deadline, as a broken wake-up leaves one. */
    for (;;)
        poll(NULL, 0, 1000);
}

static void test_never_reached(void)
{
    CU_FAIL("the watchdog let the hung test go on");
}

int main(void)
{
    CU_pSuite s;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("proof", NULL, NULL);
    CU_add_test(s, "a planted hang", test_planted_hang);
    CU_add_test(s, "after the hang", test_never_reached);
    return th_run_all();
}
