/* fake_cuda.h — what the two files of the emulated GPU share (CUDA_FAKE builds, tests only):
 * a stream that runs queued host tasks in order on a thread of its own, as a CUDA stream runs
 * kernels after the host has moved on. The emulated NCCL (fake_nccl.c) queues its calls on
 * the rank's comm stream, so a rank waiting in a collective blocks its stream, not the thread
 * that issued it, and the runtime's polling, timeouts and aborts run as they do on a GPU. */
#ifndef RL_FAKE_CUDA_H
#define RL_FAKE_CUDA_H

typedef struct fake_task fake_task;
/* A unit of stream work: run returns 0, or -1 with a message (the stream's error from then on). */
struct fake_task {
    fake_task *next;
    int (*run)(fake_task *t, char *err, int len);
    void (*free)(fake_task *t);
};

/* Queues t on the stream behind handle (from rl_cuda_rank_stream); the stream owns it then. */
void fake_stream_enqueue(void *handle, fake_task *t);

#endif
