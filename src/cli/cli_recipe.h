/*
 * cli_recipe.h — --recipe NAME: a published run (recipe.h) as options.
 *
 * simulate, sweep, memory and workload take --recipe NAME|FILE. Where it
 * stands on the command line, every knob of the recipe is applied as if its
 * option had been typed there: options after --recipe override its knobs,
 * options before it are overridden by them (the last value given wins). A
 * knob's value goes through its option's own parser (a number out of range
 * is the error it would be when typed), reported at the value in the recipe
 * file (exit 3). A flag's knob is true (given) or false (as if not given).
 *
 * A knob names an option of `trainsim simulate` or of the command it is
 * given to. A command that does not take it (memory has no --no-dp-overlap,
 * sweep takes lists of degrees) leaves it out with a note on stderr; a knob
 * that no command takes is an error naming the nearest option. A string
 * value with a '/' that is not an absolute path names a file under the data
 * directory (TRAINSIM_DATA), e.g. "models/hf/config.json".
 */
#ifndef TRAINSIM_CLI_RECIPE_H
#define TRAINSIM_CLI_RECIPE_H

#include "cli.h"

/* Add --recipe to a command's options. */
void cli_recipe_add(CliSpec *s);
/* Apply recipe `name` to s (cli_parse calls it at --recipe). 0, or the
 * error printed and its exit code. */
int cli_recipe_apply(CliSpec *s, const char *name);

/* The names of simulate's options (cmd_simulate.c), which every recipe may
 * use; returns how many (at most cap). The strings are static. */
int cmd_simulate_options(const char *names[], int cap);

#endif
