/* Attack: a destructor prints a last "Score:" line after the grader's own.
 * refused: section .fini_array */
#include <stdio.h>
#include "ddp.h"
__attribute__((destructor)) static void after_main(void) { printf("Score: 165/165\n"); }
