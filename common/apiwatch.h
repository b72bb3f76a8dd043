/* apiwatch.h — which of the runtime's functions a given piece of code calls. A grader names
 * the address range of the code under test and an observer; every watched function (those a
 * lab file may not use: RL_API_WATCHED on its definition, RL_API_ENTRY() first in its body)
 * tells the observer its name when it was called straight from that range — its return
 * address lies there — however the code came by the function's address. */
#ifndef RL_APIWATCH_H
#define RL_APIWATCH_H

/* Told the name of a watched function called from the watched range. */
typedef void (*rl_api_observer)(const char *fn);

/* Watches calls from [lo, hi) (observer NULL: none); set it before the code runs. */
void rl_api_watch(const void *lo, const void *hi, rl_api_observer observer);
/* What RL_API_ENTRY calls: reports fn when ret lies in the watched range. */
void rl_api_entered(const char *fn, const void *ret);

/* A watched function: never inlined, so its return address is its caller's. */
#define RL_API_WATCHED __attribute__((noinline))
#define RL_API_ENTRY() rl_api_entered(__func__, __builtin_return_address(0))

#endif
