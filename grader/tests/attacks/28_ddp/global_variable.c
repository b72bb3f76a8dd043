/* Attack surface: a global variable of the lab file (it could shadow one of the grader's).
 * refused: defines the global symbol calls_seen */
#include "ddp.h"
int calls_seen;
