/* apiwatch.h — which of the runtime's functions a given piece of code calls. A grader names
 * the address range of the code under test and a file descriptor (the write end of a pipe its
 * own process reads); every watched function (those a lab file may not use: RL_API_WATCHED on
 * its definition, RL_API_ENTRY() first in its body) writes its name there when it was called
 * straight from that range — its return address lies there — or from outside the program's own
 * code (a library calling back an address the code under test gave it), however the caller came
 * by the function's address, or with a return address no call put there. rl_api_watch_seal makes
 * the watch's settings read-only. */
#ifndef RL_APIWATCH_H
#define RL_APIWATCH_H

/* Watches calls from [lo, hi), writing each watched function's name, NUL-ended, to fd (fd < 0:
 * no watch); set it before the code runs. */
void rl_api_watch(const void *lo, const void *hi, int fd);
/* Makes the watch's settings read-only for the rest of the process; 0, or -1 with errno. */
int rl_api_watch_seal(void);
/* What RL_API_ENTRY calls: reports fn when ret lies in the watched range or, unless thread_entry
 * (a thread's start routine, called by the C library), outside the program's code — or when no
 * call instruction ends just before ret (a return address forged to point at some ret byte of
 * the runtime's code, the caller hidden). */
void rl_api_entered(const char *fn, const void *ret, int thread_entry);
/* 1 when the bytes just before ret are an x86-64 call (E8 rel32, or FF /2 with its ModRM, SIB,
 * displacement and up to two prefixes), as before every true return address; else 0. */
int rl_api_after_call(const void *ret);

/* A watched function: never inlined, so its return address is its caller's. */
#define RL_API_WATCHED __attribute__((noinline))
#define RL_API_ENTRY() rl_api_entered(__func__, __builtin_return_address(0), 0)
#define RL_API_ENTRY_THREAD() rl_api_entered(__func__, __builtin_return_address(0), 1)

#endif
