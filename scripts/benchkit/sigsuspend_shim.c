/*
 * Preloaded into a process that runs under valgrind 3.19 (Debian 12) by `scripts/bench --callgrind`.
 *
 * libdispatch's dispatch_main (which Swift's async main ends in) calls sigsuspend with a mask in read-only memory;
 * valgrind's wrapper of rt_sigsuspend writes into the mask it is given and the process dies of SIGSEGV. This
 * sigsuspend hands the kernel a copy on the stack instead, with the same effect.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t writable = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &writable, _NSIG / 8);
}
