/* bootstrap.h — start-up of a run with one process per rank (multi-GPU, multi-node): who am
 * I (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT as torchrun sets them, or
 * Slurm's SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID), and sharing one opaque id (the NCCL
 * unique id, 128 bytes) from rank 0 with every rank: over TCP (rank 0 serves it on
 * MASTER_ADDR:MASTER_PORT, the others connect with retries until a timeout), or by
 * MPI_Bcast under mpirun in a build with MPI. Plain POSIX sockets, no CUDA needed. */
#ifndef RL_BOOTSTRAP_H
#define RL_BOOTSTRAP_H

#define RL_BOOTSTRAP_MAX_ID 1024 /* largest id that can be shared, in bytes */

/* Where this process sits in a multi-process run. */
typedef struct rl_dist_env {
    int rank;              /* global rank, 0 .. world_size-1 */
    int world_size;
    int local_rank;        /* rank on this node (picks the GPU); = rank when not given */
    char master_addr[256]; /* host or address of rank 0 (default 127.0.0.1) */
    int master_port;       /* TCP port rank 0 listens on (default 29500) */
} rl_dist_env;

/* Fills e from the given strings (NULL = not set; addr and port have defaults, local_rank
 * defaults to rank). Returns 0, or -1 with a one-line message naming the bad variable. */
int rl_dist_env_parse(rl_dist_env *e, const char *rank, const char *world_size, const char *local_rank,
                      const char *master_addr, const char *master_port, char *err, int len);
/* Reads the environment (RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT, else the Slurm
 * variables, else Open MPI's OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK, else MPICH's PMI_RANK/
 * PMI_SIZE/MPI_LOCALRANKID). Returns 1 when this is a multi-process launch, 0 when RANK and WORLD_SIZE are
 * both unset (a single-process run), -1 with a message when a value is bad. */
int rl_dist_env_read(rl_dist_env *e, char *err, int len);

/* Shares id[0..bytes) of rank 0 with every rank over TCP: rank 0 listens on master_port and
 * answers world_size-1 ranks; the others connect to master_addr:master_port (retrying while
 * nobody listens) and receive it into id. Gives up after timeout_s seconds with a message
 * saying who is missing. Returns 0 or -1. */
int rl_bootstrap_tcp(const rl_dist_env *e, void *id, int bytes, double timeout_s, char *err, int len);

/* 1 if this process was started by mpirun/mpiexec (Open MPI, MPICH or PMIx variables). */
int rl_bootstrap_under_mpi(void);
/* Under mpirun in a build with MPI: initialises MPI if needed, fills e (rank, size, local rank
 * from the MPI launcher) and broadcasts id[0..bytes) from rank 0. Returns 0, or -1 with a
 * message (e.g. "this build has no MPI"). */
int rl_bootstrap_mpi(rl_dist_env *e, void *id, int bytes, char *err, int len);
/* Finalises MPI if rl_bootstrap_mpi initialised it. */
void rl_bootstrap_mpi_finalize(void);

#endif
