/* Attack: a pragma that changes how the grader builds the lab file.
 * refused: a pragma */
#pragma GCC optimize("O3")
#include "mp.h"
