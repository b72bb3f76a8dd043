/* bootstrap_mpi.c — the unique id by MPI_Bcast under mpirun. Compiled by mpicc when the
 * build found it (RL_HAVE_MPI, see the Makefile's CUDA/NCCL/MPI section); otherwise the
 * functions say that this build has no MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "bootstrap.h"

#ifdef RL_HAVE_MPI
#include <mpi.h>

/* Set when this module called MPI_Init (the launcher's state, one per process). */
static int we_initialised;

RL_API_WATCHED
int rl_bootstrap_mpi(rl_dist_env *e, void *id, int bytes, char *err, int len)
{
    RL_API_ENTRY();
    int init = 0, size = 0, rank = 0;
    if (!e || !id || bytes < 1 || bytes > RL_BOOTSTRAP_MAX_ID) {
        snprintf(err, (size_t)len, "bootstrap (MPI): bad arguments (id of %d bytes)", bytes);
        return -1;
    }
    MPI_Initialized(&init);
    if (!init) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
            snprintf(err, (size_t)len, "MPI_Init failed; start the program with mpirun, or without MPI use "
                     "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT");
            return -1;
        }
        we_initialised = 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(e, 0, sizeof *e);
    e->rank = rank;
    e->world_size = size;
    e->local_rank = rank;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!lr)
        lr = getenv("MPI_LOCALRANKID");
    if (lr)
        e->local_rank = atoi(lr);
    snprintf(e->master_addr, sizeof e->master_addr, "(mpi)");
    if (MPI_Bcast(id, bytes, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
        snprintf(err, (size_t)len, "rank %d: MPI_Bcast of the unique id failed", rank);
        return -1;
    }
    return 0;
}

RL_API_WATCHED
void rl_bootstrap_mpi_finalize(void)
{
    RL_API_ENTRY();
    int fin = 0;
    MPI_Finalized(&fin);
    if (we_initialised && !fin)
        MPI_Finalize();
    we_initialised = 0;
}

#else

RL_API_WATCHED
int rl_bootstrap_mpi(rl_dist_env *e, void *id, int bytes, char *err, int len)
{
    RL_API_ENTRY();
    (void)e;
    (void)id;
    (void)bytes;
    snprintf(err, (size_t)len, "this build has no MPI (mpicc was not found, or MPI=0); launch with RANK, "
             "WORLD_SIZE, MASTER_ADDR and MASTER_PORT instead (torchrun/Slurm style)");
    return -1;
}

RL_API_WATCHED
void rl_bootstrap_mpi_finalize(void) { RL_API_ENTRY();}

#endif
