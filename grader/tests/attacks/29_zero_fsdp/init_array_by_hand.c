/* Attack: a constructor placed in .init_array by hand, without the attribute.
 * refused: section .init_array */
#include "zero.h"
static void early(void) {}
__attribute__((section(".init_array"), used)) static void (*const early_ptr)(void) = early;
