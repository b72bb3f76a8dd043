/* mem.c — per-rank memory account. */
#include "apiwatch.h"
#include "mem.h"
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *const cat_names[RL_MEM_NCAT] = {
    "param", "grad", "optim", "activation", "comm", "other"
};

const char *rl_mem_cat_name(rl_mem_cat cat)
{
    return (cat >= 0 && cat < RL_MEM_NCAT) ? cat_names[cat] : "?";
}

int rl_mem_cat_parse(const char *name)
{
    for (int i = 0; i < RL_MEM_NCAT; i++)
        if (name && strcmp(name, cat_names[i]) == 0)
            return i;
    return -1;
}

RL_API_WATCHED
void rl_mem_charge(rl_mem_account *acc, rl_mem_cat cat, int64_t bytes)
{
    RL_API_ENTRY();
    if (!acc || cat < 0 || cat >= RL_MEM_NCAT)
        return;
    acc->current[cat] += bytes;
    acc->current_total += bytes;
    if (acc->current[cat] > acc->peak[cat])
        acc->peak[cat] = acc->current[cat];
    if (acc->current_total > acc->peak_total)
        acc->peak_total = acc->current_total;
}

RL_API_WATCHED
void rl_mem_reset_peaks(rl_mem_account *acc)
{
    RL_API_ENTRY();
    for (int i = 0; i < RL_MEM_NCAT; i++)
        acc->peak[i] = acc->current[i];
    acc->peak_total = acc->current_total;
}

char *rl_fmt_bytes(double bytes, char *buf, int size)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    double v = bytes < 0 ? -bytes : bytes;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, (size_t)size, "%s%.0f B", bytes < 0 ? "-" : "", v);
    else
        snprintf(buf, (size_t)size, "%s%.2f %s", bytes < 0 ? "-" : "", v, units[u]);
    return buf;
}

double rl_mem_address_space_left(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return -1;
    double used = -1; /* the address space already taken: /proc/self/statm's first field, in pages */
    FILE *st = fopen("/proc/self/statm", "r");
    long long pages;
    if (st && fscanf(st, "%lld", &pages) == 1)
        used = (double)pages * (double)sysconf(_SC_PAGESIZE);
    if (st)
        fclose(st);
    double left = (double)lim.rlim_cur - (used > 0 ? used : 0);
    return left > 0 ? left : 0;
}

double rl_mem_available(void)
{
    double avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        long long kb;
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            avail = 1024.0 * (double)kb;
    }
    if (f)
        fclose(f);
    double left = rl_mem_address_space_left();
    if (left >= 0 && (avail < 0 || left < avail))
        avail = left;
    return avail;
}
