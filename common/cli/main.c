/* main.c — build/ringlab: the tools (bench, ...), one subcommand each. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "err.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    { "bench", rl_cmd_bench, "nccl-tests-style collective benchmark (modelled and wall time)" },
    { "train", rl_cmd_train, "one-rank training of a model (mlp, transformer, moe) on its synthetic task" },
    { "view", rl_cmd_view, "replay a trace in the terminal UI, or render a view as text (--render)" },
    { "hint", rl_cmd_hint, "a lab step's hints, one rung at a time (make hint LAB=28 STEP=28.1)" },
    { "progress", rl_cmd_progress, "every lab step: last grade, hints shown, stale or not, what to do next" },
    { "calc", rl_cmd_calc, "cost calculators: ZeRO memory, collectives, TP, activations, bubble, FLOPs, MoE, plan" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ringlab COMMAND [options]   (ringlab COMMAND --help for each)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    rl_program_start();
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ringlab: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
