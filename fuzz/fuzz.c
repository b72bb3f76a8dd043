/* fuzz.c — the helpers of fuzz.h. */
#include "fuzz.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int rl_fuzz_file(const uint8_t *data, size_t size, char *path, size_t pathlen)
{
    int fd = memfd_create("rl_fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    return fd;
}

char *rl_fuzz_string(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = 0;
    }
    return s;
}
