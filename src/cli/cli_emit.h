/*
 * cli_emit.h — `--emit F` of `simulate` and `sweep`: the plan as a
 * framework's launch recipe (report_emit.h) printed instead of the summary,
 * so that it can be piped into a launch script.
 */
#ifndef TRAINSIM_CLI_EMIT_H
#define TRAINSIM_CLI_EMIT_H

#include "cli.h"
#include "trainsim/report_emit.h"
#include "trainsim/search.h"

typedef struct CliEmit {
    const char *name;      /* --emit's value, NULL: not given */
    RepEmitTarget target;  /* parsed by cli_emit_check */
} CliEmit;

void cli_emit_add(CliSpec *s, CliEmit *r);
/* --emit's value a target (else the usage error); with it, an option of the
 * NULL-terminated `clash` list ("json": another stdout format) is a usage
 * error, and *framework / *precision (the option strings the command parses)
 * default to the target's when --framework (and its aliases
 * --eager-pytorch, --deepspeed-pipe) / --precision were not given. 0, or
 * the error printed and 2. */
int cli_emit_check(const CliSpec *s, CliEmit *r, const char *const clash[], const char **framework,
                     const char **precision);
/* `simulate`: the recipe of the simulated setup into out; a plan that does
 * not fit in memory (res) is warned about on stderr (the command still exits
 * 4). 0, or the error printed and its exit code. */
int cli_emit_write(const CliEmit *r, const SimSetup *in, const SimResult *res, TsBuf *out);
/* `sweep`: the recipe of the best ranked plan the target can run (a note on
 * stderr when it is not the first). 0, or the error printed and its exit
 * code (4 when no ranked plan can be written). */
int cli_emit_sweep(const CliEmit *r, const SearchEvalCtx *x, const SearchResult *res, TsBuf *out);

#endif
