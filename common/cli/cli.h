/* cli.h — the subcommands of build/ringlab. Each takes argv after its own name and
 * returns the process exit status. */
#ifndef RL_CLI_H
#define RL_CLI_H

/* ringlab bench COLLECTIVE — nccl-tests-style tables on the chosen backend. */
int rl_cmd_bench(int argc, char **argv);
/* ringlab bench gemm — GFLOP/s of a 1024³ fp32 GEMM next to this core's peak estimate. */
int rl_cmd_bench_gemm(int argc, char **argv);
/* ringlab train — one-rank training of a model (mlp, transformer, moe) on its synthetic task. */
int rl_cmd_train(int argc, char **argv);
/* ringlab calc TOPIC — the course's cost calculators (common/calc.h). */
int rl_cmd_calc(int argc, char **argv);
/* ringlab hint LABDIR STEP — the next rung of a step's hint ladder (common/hints.h). */
int rl_cmd_hint(int argc, char **argv);
/* ringlab progress — every lab step's last grade, hints shown, staleness and the next thing to do. */
int rl_cmd_progress(int argc, char **argv);
/* ringlab view FILE — replay a trace in the TUI, or render a view as text (tui/cmd_view.c). */
int rl_cmd_view(int argc, char **argv);

#endif
