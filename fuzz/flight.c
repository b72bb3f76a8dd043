/* flight.c — fuzz target: the flight-dump loader and the root-cause analysis on whatever it
 * accepts (two dumps merged, as with one dump per process). */
#include <string.h>
#include <unistd.h>
#include "diagnose.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[256];
    int fd = rl_fuzz_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    rl_diag_flight fl;
    memset(&fl, 0, sizeof fl);
    if (rl_diag_flight_load(path, &fl, err, sizeof err) == 0) {
        rl_diag_result r;
        rl_diag_flight_analyze(&fl, &r);
        if (size % 2 && rl_diag_flight_load(path, &fl, err, sizeof err) == 0)
            rl_diag_flight_analyze(&fl, &r);
    }
    rl_diag_flight_free(&fl);
    close(fd);
    return 0;
}
