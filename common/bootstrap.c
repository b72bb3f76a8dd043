/* bootstrap.c — the environment of a multi-process run and the TCP exchange of rank 0's
 * unique id (see bootstrap.h). Wire format, all integers big-endian 32-bit:
 *   rank k → rank 0: "RLB1", rank, world_size, id bytes
 *   rank 0 → rank k: "RLB1", 0 (ok) or an error code, then the id (when ok). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "apiwatch.h"
#include "bootstrap.h"

#define MAGIC "RLB1"
enum { ANSWER_OK = 0, ANSWER_BAD_SIZE = 1, ANSWER_BAD_RANK = 2, ANSWER_DUP_RANK = 3, ANSWER_BAD_BYTES = 4 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !*s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

RL_API_WATCHED
int rl_dist_env_parse(rl_dist_env *e, const char *rank, const char *world_size, const char *local_rank,
                      const char *master_addr, const char *master_port, char *err, int len)
{
    RL_API_ENTRY();
    memset(e, 0, sizeof *e);
    if (!rank || !world_size) {
        snprintf(err, (size_t)len, "%s is not set: a multi-process run needs RANK and WORLD_SIZE (as torchrun "
                 "or Slurm set them) on every process", !rank ? "RANK" : "WORLD_SIZE");
        return -1;
    }
    if (parse_int(world_size, 1, 1 << 20, &e->world_size)) {
        snprintf(err, (size_t)len, "WORLD_SIZE='%s': give the number of processes, a whole number >= 1", world_size);
        return -1;
    }
    if (parse_int(rank, 0, e->world_size - 1, &e->rank)) {
        snprintf(err, (size_t)len, "RANK='%s': give a whole number from 0 to WORLD_SIZE-1 = %d", rank,
                 e->world_size - 1);
        return -1;
    }
    e->local_rank = e->rank;
    if (local_rank && parse_int(local_rank, 0, e->world_size - 1, &e->local_rank)) {
        snprintf(err, (size_t)len, "LOCAL_RANK='%s': give this process's index on its node, 0 to %d", local_rank,
                 e->world_size - 1);
        return -1;
    }
    const char *addr = master_addr && *master_addr ? master_addr : "127.0.0.1";
    if (strlen(addr) >= sizeof e->master_addr || strchr(addr, ' ')) {
        snprintf(err, (size_t)len, "MASTER_ADDR='%.60s': give the host name or address of rank 0", addr);
        return -1;
    }
    snprintf(e->master_addr, sizeof e->master_addr, "%s", addr);
    e->master_port = 29500;
    if (master_port && parse_int(master_port, 1, 65535, &e->master_port)) {
        snprintf(err, (size_t)len, "MASTER_PORT='%s': give a TCP port from 1 to 65535 (the same on every rank)",
                 master_port);
        return -1;
    }
    return 0;
}

RL_API_WATCHED
int rl_dist_env_read(rl_dist_env *e, char *err, int len)
{
    RL_API_ENTRY();
    /* torchrun's names, then Slurm's (srun), Open MPI's (mpirun, read without initialising MPI)
     * and MPICH's / Intel MPI's (Hydra's PMI) */
    static const char *const names[][3] = {
        { "RANK", "WORLD_SIZE", "LOCAL_RANK" },
        { "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
        { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" },
        { "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },
    };
    const char *rank = NULL, *size = NULL, *local = NULL;
    size_t k = 0;
    for (; k < sizeof names / sizeof names[0] && !rank && !size; k++) {
        rank = getenv(names[k][0]);
        size = getenv(names[k][1]);
        local = getenv(names[k][2]);
    }
    if (!rank && !size) {
        memset(e, 0, sizeof *e);
        e->world_size = 1;
        return 0;
    }
    if (!rl_dist_env_parse(e, rank, size, local, getenv("MASTER_ADDR"), getenv("MASTER_PORT"), err, len))
        return 1;
    if (k > 1) { /* the message speaks of RANK, WORLD_SIZE and LOCAL_RANK: say which were read */
        size_t used = strlen(err);
        snprintf(err + used, (size_t)len > used ? (size_t)len - used : 0, " (read from %s, %s and %s, this launcher's "
                 "names for RANK, WORLD_SIZE and LOCAL_RANK)", names[k - 1][0], names[k - 1][1], names[k - 1][2]);
    }
    return -1;
}

/* ------------------------------------------------------------------ socket helpers */

static void put32(unsigned char *p, uint32_t v)
{
    uint32_t n = htonl(v);
    memcpy(p, &n, 4);
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t n;
    memcpy(&n, p, 4);
    return ntohl(n);
}

/* Sends or receives exactly n bytes before the deadline; 0, or -1 (timeout / closed / error). */
static int xfer(int fd, void *buf, size_t n, int sending, double deadline)
{
    size_t done = 0;
    while (done < n) {
        double left = deadline - now_s();
        if (left <= 0)
            return -1;
        struct pollfd p = { fd, (short)(sending ? POLLOUT : POLLIN), 0 };
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t k = sending ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL)
                            : recv(fd, (char *)buf + done, n - done, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

/* Resolves host:port (IPv4 or IPv6) into *out; 0 or -1 with a message. */
static int resolve(const char *host, int port, struct sockaddr_storage *out, socklen_t *olen, char *err, int len)
{
    struct addrinfo hints, *res = NULL;
    char ps[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc || !res) {
        snprintf(err, (size_t)len, "MASTER_ADDR='%s' could not be resolved (%s); give rank 0's host name or address",
                 host, gai_strerror(rc));
        return -1;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *olen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int is_loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
    return 0;
}

/* ------------------------------------------------------------------ rank 0: serve */

static int serve(const rl_dist_env *e, const void *id, int bytes, double deadline, double timeout_s, char *err,
                 int len)
{
    struct sockaddr_storage addr;
    socklen_t alen;
    if (resolve(e->master_addr, e->master_port, &addr, &alen, err, len))
        return -1;
    if (!is_loopback(&addr)) { /* listen on every interface of this node */
        int port = e->master_port, fam = addr.ss_family;
        memset(&addr, 0, sizeof addr);
        if (fam == AF_INET6) {
            struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
            a6->sin6_family = AF_INET6;
            a6->sin6_addr = in6addr_any;
            a6->sin6_port = htons((uint16_t)port);
            alen = sizeof *a6;
        } else {
            struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
            a4->sin_family = AF_INET;
            a4->sin_addr.s_addr = htonl(INADDR_ANY);
            a4->sin_port = htons((uint16_t)port);
            alen = sizeof *a4;
        }
    }
    int ls = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (ls < 0) {
        snprintf(err, (size_t)len, "rank 0: socket(): %s", strerror(errno));
        return -1;
    }
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&addr, alen) || listen(ls, 128)) {
        snprintf(err, (size_t)len, "rank 0: cannot listen on port %d (%s); pick a free MASTER_PORT", e->master_port,
                 strerror(errno));
        close(ls);
        return -1;
    }
    int n = e->world_size, got = 0, rc = 0;
    char *seen = calloc((size_t)n, 1);
    while (got < n - 1) {
        double left = deadline - now_s();
        struct pollfd p = { ls, POLLIN, 0 };
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0) {
            if (left > 0 && errno == EINTR)
                continue;
            int k = snprintf(err, (size_t)len, "rank 0: only %d of %d ranks connected to port %d within %.3g s; "
                             "missing rank(s)", got + 1, n, e->master_port, timeout_s);
            for (int r = 1, shown = 0; r < n && k < len - 16; r++)
                if (!seen[r] && shown++ < 8)
                    k += snprintf(err + k, (size_t)(len - k), " %d", r);
            snprintf(err + k, (size_t)(len > k ? len - k : 0), " (are they running, with the same MASTER_ADDR/MASTER_PORT?)");
            rc = -1;
            break;
        }
        int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        unsigned char hello[16], answer[8];
        if (xfer(c, hello, sizeof hello, 0, deadline) || memcmp(hello, MAGIC, 4)) {
            close(c); /* not one of ours (or too slow): ignore it */
            continue;
        }
        int r = (int)get32(hello + 4), size = (int)get32(hello + 8), b = (int)get32(hello + 12), code = ANSWER_OK;
        if (size != n)
            code = ANSWER_BAD_SIZE;
        else if (r < 1 || r >= n)
            code = ANSWER_BAD_RANK;
        else if (seen[r])
            code = ANSWER_DUP_RANK;
        else if (b != bytes)
            code = ANSWER_BAD_BYTES;
        memcpy(answer, MAGIC, 4);
        put32(answer + 4, (uint32_t)code);
        if (!xfer(c, answer, sizeof answer, 1, deadline) && code == ANSWER_OK &&
            !xfer(c, (void *)id, (size_t)bytes, 1, deadline)) {
            seen[r] = 1;
            got++;
        }
        close(c);
    }
    free(seen);
    close(ls);
    return rc;
}

/* ------------------------------------------------------------------ rank k: fetch */

static int fetch(const rl_dist_env *e, void *id, int bytes, double deadline, double timeout_s, char *err, int len)
{
    struct sockaddr_storage addr;
    socklen_t alen;
    if (resolve(e->master_addr, e->master_port, &addr, &alen, err, len))
        return -1;
    int last_errno = 0;
    while (now_s() < deadline) {
        int c = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0) {
            snprintf(err, (size_t)len, "rank %d: socket(): %s", e->rank, strerror(errno));
            return -1;
        }
        if (connect(c, (struct sockaddr *)&addr, alen)) {
            last_errno = errno;
            close(c);
            struct timespec ts = { 0, 50 * 1000 * 1000 }; /* rank 0 may not listen yet: retry */
            nanosleep(&ts, NULL);
            continue;
        }
        unsigned char hello[16], answer[8];
        memcpy(hello, MAGIC, 4);
        put32(hello + 4, (uint32_t)e->rank);
        put32(hello + 8, (uint32_t)e->world_size);
        put32(hello + 12, (uint32_t)bytes);
        int bad = xfer(c, hello, sizeof hello, 1, deadline) || xfer(c, answer, sizeof answer, 0, deadline) ||
                  memcmp(answer, MAGIC, 4);
        int code = bad ? -1 : (int)get32(answer + 4);
        if (!bad && code == ANSWER_OK && !xfer(c, id, (size_t)bytes, 0, deadline)) {
            close(c);
            return 0;
        }
        close(c);
        if (code > 0) {
            static const char *const why[] = { "", "WORLD_SIZE differs from rank 0's", "its RANK is out of range",
                                               "another process already registered the same RANK",
                                               "the id size differs (different ringlab builds?)" };
            snprintf(err, (size_t)len, "rank %d: rank 0 at %s:%d refused it: %s", e->rank, e->master_addr,
                     e->master_port, why[code <= ANSWER_BAD_BYTES ? code : 0]);
            return -1;
        }
        last_errno = ETIMEDOUT;
    }
    snprintf(err, (size_t)len, "rank %d: nobody answered at %s:%d within %.3g s (%s); start rank 0 too, with the "
             "same MASTER_ADDR/MASTER_PORT", e->rank, e->master_addr, e->master_port, timeout_s,
             last_errno ? strerror(last_errno) : "timeout");
    return -1;
}

RL_API_WATCHED
int rl_bootstrap_tcp(const rl_dist_env *e, void *id, int bytes, double timeout_s, char *err, int len)
{
    RL_API_ENTRY();
    if (!e || !id || bytes < 1 || bytes > RL_BOOTSTRAP_MAX_ID || !(timeout_s > 0)) {
        snprintf(err, (size_t)len, "bootstrap: bad arguments (id of %d bytes, timeout %g s)", bytes, timeout_s);
        return -1;
    }
    if (e->world_size == 1)
        return 0;
    double deadline = now_s() + timeout_s;
    return e->rank == 0 ? serve(e, id, bytes, deadline, timeout_s, err, len)
                        : fetch(e, id, bytes, deadline, timeout_s, err, len);
}

RL_API_WATCHED
int rl_bootstrap_under_mpi(void)
{
    RL_API_ENTRY();
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK") ||
           getenv("MPI_LOCALNRANKS");
}
