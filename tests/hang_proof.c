/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hang_proof.c - a CUnit program with a planted hang, for
 * tests/check-hang-proof.sh: its one test starts a redis-server and a
 * child process, prints their pids, and then waits for something that
 * never comes.  The harness's watchdog must end it, naming the test.
 * "hang_proof leak" instead passes its one test while leaving a forked
 * child and a tracked grandchild running, which the harness's exit
 * check must name and kill, failing the program; "hang_proof tidy" does
 * the same and stops both, and passes.
 */
#include <sys/wait.h>

#include <poll.h>
#include <signal.h>
#include <string.h>
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

static int tidy;

/* A child, and a grandchild (its parent gone) handed to th_track(). */
static void test_planted_leak(void)
{
    int fds[2];
    pid_t child, middle, grandchild = 0;

    CU_ASSERT_FATAL(th_server_start(&srv, NULL) == 0);
    CU_ASSERT_FATAL(pipe(fds) == 0);
    child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        for (;;)
            pause();
    }
    middle = fork();
    CU_ASSERT_FATAL(middle >= 0);
    if (middle == 0) {
        pid_t g = fork();
        if (g == 0) {
            for (;;)
                pause();
        }
        (void)!write(fds[1], &g, sizeof(g));
        _exit(0);
    }
    CU_ASSERT_FATAL(read(fds[0], &grandchild, sizeof(grandchild))
                    == sizeof(grandchild));
    waitpid(middle, NULL, 0);
    close(fds[0]);
    close(fds[1]);
    th_track(grandchild);
    printf("\nserver %d child %d grandchild %d\n", (int)srv.pid, (int)child,
           (int)grandchild);
    fflush(stdout);
    if (tidy) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        kill(grandchild, SIGKILL);
        /* Not ours to reap: gone once init has (or it is a zombie). */
        for (int i = 0; i < 500 && kill(grandchild, 0) == 0; i++) {
            char path[64], st[512] = "", *p;
            FILE *f;
            snprintf(path, sizeof(path), "/proc/%d/stat", (int)grandchild);
            if ((f = fopen(path, "r")) == NULL)
                break;
            st[fread(st, 1, sizeof(st) - 1, f)] = '\0';
            fclose(f);
            if ((p = strrchr(st, ')')) != NULL && p[1] == ' ' && p[2] == 'Z')
                break;
            poll(NULL, 0, 10);
        }
    }
    CU_PASS("the test itself passes");
}

int main(int argc, char **argv)
{
    CU_pSuite s;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    if (argc > 1) { /* leak or tidy */
        tidy = strcmp(argv[1], "tidy") == 0;
        s = CU_add_suite("proof", NULL, NULL);
        CU_add_test(s, "a planted leak", test_planted_leak);
        return th_run_all();
    }
    s = CU_add_suite("proof", NULL, NULL);
    CU_add_test(s, "a planted hang", test_planted_hang);
    CU_add_test(s, "after the hang", test_never_reached);
    return th_run_all();
}
