/* trainsim — command dispatch. Every command is in cmd_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "trainsim/common.h"

#define X(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef X

typedef struct Command {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} Command;

static const Command COMMANDS[] = {
#define X(name, fn, summary) {#name, fn, summary},
#include "commands.def"
#undef X
};
enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

static void usage(FILE *fp)
{
    fprintf(fp, "usage: trainsim <command> [options]\n\n"
                "Plan large-model training without a GPU: FLOPs, memory, workloads, simulation.\n\n"
                "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(fp, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(fp, "\n'trainsim help <command>' or 'trainsim <command> --help' describes a command.\n"
                "'trainsim --version' prints the version.\n");
}

static const Command *lookup(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("trainsim %s\n", TRAINSIM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return 0;
        }
        const Command *c = lookup(argv[2]);
        if (!c) {
            fprintf(stderr, "trainsim: unknown command '%s' (see 'trainsim --help')\n", argv[2]);
            return 2;
        }
        char *av[] = {argv[2], "--help", NULL};
        return c->fn(2, av);
    }
    const Command *c = lookup(cmd);
    if (!c) {
        if (cmd[0] == '-')
            fprintf(stderr, "trainsim: unknown option '%s' (see 'trainsim --help')\n", cmd);
        else
            fprintf(stderr, "trainsim: unknown command '%s' (see 'trainsim --help')\n", cmd);
        return 2;
    }
    return c->fn(argc - 1, argv + 1);
}
