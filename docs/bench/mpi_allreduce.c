/* mpi_allreduce.c — the MPI figure to put beside `ringlab bench all_reduce` wall time:
 * MPI_Allreduce of 64 MiB of floats, 10 timed iterations, nccl-tests bandwidths.
 *   mpicc -O2 docs/bench/mpi_allreduce.c -o build/mpi_allreduce
 *   mpirun --oversubscribe -np 4 build/mpi_allreduce */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int count = 16 << 20, iters = 10;
    float *in = malloc((size_t)count * sizeof *in), *out = malloc((size_t)count * sizeof *out);
    for (int i = 0; i < count; i++)
        in[i] = 1.0f;
    for (int i = 0; i < 2; i++)
        MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters, algbw = (double)count * sizeof(float) / t / 1e9;
    if (rank == 0)
        printf("MPI_Allreduce %d MiB, %d ranks: %.2f ms, algbw %.2f GB/s, busbw %.2f GB/s\n",
               (int)(count * sizeof(float) >> 20), n, t * 1e3, algbw, algbw * 2.0 * (n - 1) / n);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
