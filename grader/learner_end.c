/* learner_end.c — closes the code under test in a grade binary. The Makefile moves the lab
 * file's code into the section rl_learner_text and links this file right after it, so the
 * code under test lies between __start_rl_learner_text and rl_learner_text_end, both on page
 * boundaries: the grader and its judge keep those pages unmapped (they never run code under
 * test), and a test's child maps them before it runs the test (grade.c). */

/* The page that ends the code under test (never called). */
__attribute__((section("rl_learner_text"), aligned(4096), noinline, used)) void rl_learner_text_end(void) {}
