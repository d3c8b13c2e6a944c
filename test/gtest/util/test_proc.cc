/**
 * gpumem tests: a process's identity as its peers know it, in its own PID
 * namespace too.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/util/gpumem_proc.h>
}

#include <cerrno>
#include <cstdlib>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>


/* What a process of a PID namespace of its own says of itself and of the
 * test's process */
struct proc_ns_report {
    pid_t pid;               /* gpumem_proc_pid() */
    pid_t ns_pid;            /* gpumem_proc_ns_pid() */
    int   test_is_gone;      /* gpumem_proc_is_gone(the test's pid) */
    int   dead_is_gone;      /* gpumem_proc_is_gone(a reaped child's pid) */
};


class proc : public testing::Test {
protected:
    /* A pid, as /proc names it, that no process has any more */
    static pid_t dead_pid() {
        pid_t pid = fork();

        if (pid == 0) {
            _exit(0);
        }
        waitpid(pid, NULL, 0);
        return pid;
    }
};


/* The pid /proc names the process by, getpid() for its own calls */
TEST_F(proc, a_process_is_known_by_its_pid_in_proc) {
    char link[32] = {};

    ASSERT_LT(0, readlink("/proc/self", link, sizeof(link) - 1));
    EXPECT_EQ(atoi(link), gpumem_proc_pid());
    EXPECT_EQ(getpid(), gpumem_proc_ns_pid());
    EXPECT_FALSE(gpumem_proc_is_gone(gpumem_proc_pid()));
    EXPECT_TRUE(gpumem_proc_is_gone(dead_pid()));
}

/* A process alone in its PID namespace is process 1 to itself, and known by
 * its pid in /proc, which the test's process sees; it tells the live test's
 * process from a dead one by /proc, where kill() reaches neither */
TEST_F(proc, in_its_own_namespace_a_process_is_known_by_its_proc_pid) {
    struct proc_ns_report report = {};
    pid_t test_pid = gpumem_proc_pid(), dead = dead_pid(), child, grandchild;
    int pipe_fds[2], status;

    ASSERT_EQ(0, pipe(pipe_fds));
    child = fork();
    ASSERT_LE(0, child);
    if (child == 0) {
        close(pipe_fds[0]);
        if (unshare(CLONE_NEWPID) != 0) {
            _exit(2);
        }

        /* The first child after unshare() is its namespace's process 1;
         * its pid here is the one /proc shows */
        grandchild = fork();
        if (grandchild == 0) {
            report.pid          = gpumem_proc_pid();
            report.ns_pid       = gpumem_proc_ns_pid();
            report.test_is_gone = gpumem_proc_is_gone(test_pid);
            report.dead_is_gone = gpumem_proc_is_gone(dead);
            _exit((write(pipe_fds[1], &report, sizeof(report)) ==
                   (ssize_t)sizeof(report)) ? 0 : 3);
        }
        /* Its report first, then its pid: one after the other */
        if ((grandchild < 0) || (waitpid(grandchild, &status, 0) < 0) ||
            !WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
            _exit(4);
        }
        _exit((write(pipe_fds[1], &grandchild, sizeof(grandchild)) ==
               (ssize_t)sizeof(grandchild)) ? 0 : 3);
    }

    close(pipe_fds[1]);
    ASSERT_EQ(child, waitpid(child, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 2) {
        close(pipe_fds[0]);
        GTEST_SKIP() << "unshare(CLONE_NEWPID) refused (needs CAP_SYS_ADMIN)";
    }
    ASSERT_EQ(0, WEXITSTATUS(status));
    ASSERT_EQ((ssize_t)sizeof(report),
              read(pipe_fds[0], &report, sizeof(report)));
    ASSERT_EQ((ssize_t)sizeof(grandchild),
              read(pipe_fds[0], &grandchild, sizeof(grandchild)));
    close(pipe_fds[0]);

    EXPECT_EQ(1, report.ns_pid);
    EXPECT_EQ(grandchild, report.pid) << "its pid in /proc, not getpid()";
    EXPECT_FALSE(report.test_is_gone) << "the test's process lives";
    EXPECT_TRUE(report.dead_is_gone);
}
