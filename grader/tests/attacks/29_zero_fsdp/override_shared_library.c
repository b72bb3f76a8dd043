/* Attack: overriding a shared library's function (jansson's json_dump_file writes results.json).
 * refused: defines the global symbol json_dump_file */
#include "zero.h"
int json_dump_file(const void *json, const char *path, unsigned long flags)
{
    (void)json, (void)path, (void)flags;
    return 0;
}
