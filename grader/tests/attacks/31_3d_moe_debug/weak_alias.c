/* Attack: a second, weak name that would stand in for a runtime function nobody defines.
 * refused: the attribute weak */
#include "lab31.h"
__attribute__((weak)) int lab31_helper(void) { return 0; }
