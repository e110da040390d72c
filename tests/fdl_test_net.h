/*
 * Loopback helpers shared by the Criterion tests that run real servers (redis-server, nginx):
 * a free port, a connection, and the wait until a started server listens.
 */
#ifndef FDLINK_TESTS_FDL_TEST_NET_H
#define FDLINK_TESTS_FDL_TEST_NET_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* A free loopback port (bound, read back, released). */
static inline int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(s, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);
    return ntohs(a.sin_port);
}

/* A connection to 127.0.0.1:@p port, or -1. */
static inline int loopback_connect(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        close(s);
        s = -1;
    }
    return s;
}

/*
 * Wait until the server @p pid started listens on @p port; fails the test when it exits first.
 * No time limit of its own (a slow machine is no failure): ctest's timeout bounds a hang.
 */
static inline void wait_listening(int port, pid_t pid)
{
    for (;;) {
        int s = loopback_connect(port);
        if (s >= 0) {
            close(s);
            return;
        }
        int st;
        cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "the server exited before listening on %d",
                     port);
        usleep(10000);
    }
}

#endif /* FDLINK_TESTS_FDL_TEST_NET_H */
