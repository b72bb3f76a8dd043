/* Attack surface: code in a section of its own (linker tricks, a second .init).
 * refused: section ringlab_hook is not code, data or read-only data */
#include "zero.h"
__attribute__((section("ringlab_hook"), used)) static int hook(void) { return 1; }
