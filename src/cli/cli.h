/*
 * cli.h — the command-line layer: option tables, shared option groups and
 * output helpers. Only main() and the cmd_*.c files use it; they call the
 * library through its public headers only.
 *
 * Conventions: `trainsim <command> [options]`; long options as `--name value`
 * or `--name=value`; `--help` on every command; a bad option prints one line
 * naming it and pointing to --help, exit code 2; a numeric value out of its
 * option's range (or not a number) names the option and the range, exit 2.
 */
#ifndef TRAINSIM_CLI_H
#define TRAINSIM_CLI_H

#include "trainsim/common.h"
#include "trainsim/graph.h"
#include "trainsim/model.h"

typedef enum { CLI_FLAG, CLI_INT, CLI_DOUBLE, CLI_BYTES, CLI_STR, CLI_NOFLAG, CLI_RECIPE } CliKind;

/* One option. dst points to bool (FLAG/NOFLAG: NOFLAG stores false),
 * int64_t (INT), double (DOUBLE; BYTES: a size in bytes, ts_parse_bytes) or
 * const char * (STR); RECIPE (--recipe, cli_recipe.h) has none: it applies
 * a recipe's knobs where it stands. `seen`, when set, records that the
 * option was given.
 *
 * Numeric options (INT, DOUBLE, BYTES) take the range that cli.c's limits
 * table gives their name (the same in every command: --seq is 1..2^24
 * wherever it appears); a value outside it, or one that does not parse, is a
 * usage error naming the option and the range (exit 2):
 *     error: --global-batch -5 is out of range
 *     hint: --global-batch takes an integer from 1 to 1073741824 */
/* A string option's value check: TS_OK, or TS_ERR_USAGE in *err naming
 * the option (opt, without "--") and what it takes. */
typedef TsStatus (*CliCheck)(const char *opt, const char *val, TsError *err);

typedef struct CliOpt {
    const char *name;    /* without the leading "--" */
    CliKind kind;
    void *dst;
    const char *metavar; /* "N", "FILE" */
    const char *help;
    bool *seen;
    const struct CliLimit *lim; /* numeric kinds: the accepted range (cli.c) */
    CliCheck check;      /* CLI_STR: the value's check at cli_set (typed or from a recipe), or NULL */
} CliOpt;

#define CLI_MAX_OPTS 160
#define CLI_STORE_BYTES 16384 /* option values that come from a recipe, not argv */

typedef struct CliSpec {
    const char *cmd;      /* "profile" */
    const char *usage;    /* "trainsim profile [--model M] [options]" */
    const char *summary;  /* one paragraph */
    CliOpt opts[CLI_MAX_OPTS];
    int n;
    int max_positional;   /* 0: none allowed */
    const char *positional[8];
    int n_positional;
    bool seen[CLI_MAX_OPTS]; /* filled by cli_parse */
    char store[CLI_STORE_BYTES]; /* the string values a recipe gave (cli_store) */
    size_t store_used;
} CliSpec;

/* Add an option; a numeric one must have a row in the limits table (else
 * abort(): a programming error that any run of the command shows). */
void cli_add(CliSpec *s, const char *name, CliKind kind, void *dst, const char *metavar,
             const char *help);
/* Check option `name`'s value whenever it is set (cli_set): a bad value is
 * then reported where it was given, on the command line or at a recipe's
 * file:line:col. */
void cli_add_check(CliSpec *s, const char *name, CliCheck check);
/* Parse argv (argv[0] is the command name). Returns:
 *   0  parsed; -1 help printed (exit 0); 2 usage error printed to stderr. */
int cli_parse(CliSpec *s, int argc, char **argv);
void cli_print_help(const CliSpec *s, FILE *fp);
/* Was option `name` given? */
bool cli_seen(const CliSpec *s, const char *name);
/* The option called `name` (without "--"), or NULL. */
CliOpt *cli_find(CliSpec *s, const char *name);
/* Give option o the value val (NULL for a flag), as if typed: numbers are
 * checked against the option's range. TS_OK, or TS_ERR_USAGE in *err
 * (message and hint, nothing printed). val must outlive the command (argv,
 * or cli_store). */
TsStatus cli_set(CliSpec *s, CliOpt *o, const char *val, TsError *err);
/* Undo a flag: as if o had not been given. */
void cli_unset_flag(CliSpec *s, CliOpt *o);
/* A copy of text in s->store (lives as long as s), or NULL when full. */
const char *cli_store(CliSpec *s, const char *text);

/* A mode that takes only some options: ok[0] names the mode's own option
 * ("workload" for --workload), the NULL-terminated rest the options that
 * still apply. The first other option given is a usage error ("--X does
 * not apply with --MODE: why", hint: the allowed list, then `hint`); 0 when
 * none. */
int cli_only(const CliSpec *s, const char *const ok[], const char *why, const char *hint);

/* Print err to stderr in the house format; return its exit code. */
int cli_fail(const TsError *err);
/* Write text to `path` atomically, or to stdout when path is NULL/"-". */
int cli_emit(const char *path, const TsBuf *text);

/* ---- shared option group: the model ---------------------------------------- */
typedef struct CliModel {
    const char *model;      /* --model preset|FILE */
    const char *arch;       /* --arch */
    const char *naming;     /* --naming megatron|hf|deepspeed */
    ModelOverrides ov;
} CliModel;

void cli_model_init(CliModel *cm);
void cli_model_add(CliSpec *s, CliModel *cm);
/* Load the model per the options; on failure prints and returns exit code. */
int cli_model_load(CliModel *cm, const char *default_model, ModelSpec *out);
/* Resolve --naming (or the family default). Returns 2 on a bad value. */
int cli_naming(const CliModel *cm, const ModelSpec *m, GraphNaming *out);

#endif
