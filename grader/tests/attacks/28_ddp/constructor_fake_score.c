/* Attack: a constructor runs before the grader's main and could rewrite its output.
 * refused: section .init_array */
#include <stdio.h>
#include "ddp.h"
__attribute__((constructor)) static void before_main(void) { printf("Score: 165/165\n"); }
