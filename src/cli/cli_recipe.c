/* --recipe: a recipe's knobs applied as options (cli_recipe.h). */
#include "cli_recipe.h"

#include <string.h>

#include "trainsim/recipe.h"

void cli_recipe_add(CliSpec *s)
{
    cli_add(s, "recipe", CLI_RECIPE, NULL, "NAME",
            "start from a published run: data/recipes/NAME.json or a file ('trainsim recipes' lists them); "
            "options after it override its knobs");
}

/* Point err at the knob's value (or at the knob itself) in the recipe file;
 * a bad recipe is bad input. */
static int fail_at(const Recipe *r, const RecipeKnob *k, bool at_key, TsError *e)
{
    e->code = TS_ERR_INPUT;
    ts_err_at(e, r->path, at_key ? k->key_line : k->line, at_key ? k->key_col : k->col, r->text);
    return cli_fail(e);
}

/* The option nearest `name` among the command's and simulate's, or NULL. */
static const char *nearest(const CliSpec *s, const char *name, const char *const *sim, int n_sim)
{
    const char *best = NULL;
    int bd = 3; /* a typo: at most two edits away */
    for (int i = 0; i < s->n + n_sim; i++) {
        const char *o = i < s->n ? s->opts[i].name : sim[i - s->n];
        int d = ts_edit_distance(o, name);
        if (d < bd) bd = d, best = o;
    }
    return best;
}

static int unknown_knob(const CliSpec *s, const Recipe *r, const RecipeKnob *k, const char *const *sim, int n_sim)
{
    TsError e = {0};
    ts_err(&e, TS_ERR_INPUT, "unknown option '--%s' in recipe %s", k->option, r->name);
    char which[80] = "'trainsim simulate'";
    if (strcmp(s->cmd, "simulate")) snprintf(which, sizeof which, "'trainsim %s' or 'trainsim simulate'", s->cmd);
    const char *best = nearest(s, k->option, sim, n_sim);
    if (best) ts_err_hint(&e, "did you mean '%s'? a knob is keyed by an option of %s", best, which);
    else ts_err_hint(&e, "a knob is keyed by an option of %s (see its --help)", which);
    return fail_at(r, k, true, &e);
}

/* Whether the knob's JSON type suits the option, and what the option takes. */
static bool type_fits(CliKind kind, RecipeValue t, const char **takes)
{
    switch (kind) {
    case CLI_FLAG:
    case CLI_NOFLAG: *takes = "true or false (it is a flag)"; return t == RECIPE_BOOLEAN;
    case CLI_INT: *takes = "an integer"; return t == RECIPE_INTEGER;
    case CLI_DOUBLE: *takes = "a number"; return t == RECIPE_INTEGER || t == RECIPE_NUMBER;
    case CLI_BYTES: *takes = "a size (a number, or a string such as \"64MiB\")"; return t != RECIPE_BOOLEAN;
    default: *takes = "a string"; return true; /* a list option (sweep) takes 16 as "16" */
    }
}

/* A string value naming a file under the data directory, made a path. */
static const char *value_text(CliSpec *s, const CliOpt *o, const RecipeKnob *k)
{
    if (o->kind != CLI_STR || k->type != RECIPE_STRING || !strchr(k->text, '/') || k->text[0] == '/')
        return cli_store(s, k->text);
    char path[2200];
    snprintf(path, sizeof path, "%s/%s", ts_data_dir(), k->text);
    return cli_store(s, path);
}

static int apply_knob(CliSpec *s, CliOpt *o, const Recipe *r, const RecipeKnob *k)
{
    TsError e = {0};
    const char *takes;
    if (!type_fits(o->kind, k->type, &takes)) {
        ts_err(&e, TS_ERR_INPUT, "--%s takes %s; recipe %s gives %s", o->name, takes, r->name,
               recipe_value_name(k->type));
        ts_err_hint(&e, "write the value as the option takes it on the command line (docs/recipes.md)");
        return fail_at(r, k, false, &e);
    }
    if (o->kind == CLI_FLAG || o->kind == CLI_NOFLAG) {
        if (!strcmp(k->text, "true")) cli_set(s, o, NULL, &e);
        else cli_unset_flag(s, o);
        return 0;
    }
    const char *val = value_text(s, o, k);
    if (!val) {
        ts_err(&e, TS_ERR_INPUT, "recipe %s: its values exceed %d bytes", r->name, CLI_STORE_BYTES);
        ts_err_hint(&e, "a recipe holds the options of one run; shorten its values");
        return fail_at(r, k, false, &e);
    }
    if (cli_set(s, o, val, &e) != TS_OK) return fail_at(r, k, false, &e);
    return 0;
}

/* "--a, --b and --c" into out. */
static void list_options(const char *const *names, int n, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s--%s", i == 0 ? "" : i + 1 < n ? ", " : " and ", names[i]);
}

int cli_recipe_apply(CliSpec *s, const char *name)
{
    enum { MAX_SIM = CLI_MAX_OPTS };
    TsError e = {0};
    Recipe *r;
    if (recipe_load(name, &r, &e) != TS_OK) return cli_fail(&e);
    const char *sim[MAX_SIM], *skipped[MAX_SIM];
    int n_sim = cmd_simulate_options(sim, MAX_SIM), n_skip = 0, rc = 0;
    for (int i = 0; i < r->n_knobs && !rc; i++) {
        const RecipeKnob *k = &r->knobs[i];
        CliOpt *o = cli_find(s, k->option);
        if (o && o->kind != CLI_RECIPE) {
            rc = apply_knob(s, o, r, k);
            continue;
        }
        bool sim_takes = false;
        for (int j = 0; j < n_sim && !sim_takes; j++) sim_takes = !strcmp(sim[j], k->option);
        if (!sim_takes) rc = unknown_knob(s, r, k, sim, n_sim);
        else if (n_skip < MAX_SIM) skipped[n_skip++] = k->option;
    }
    if (!rc && n_skip) {
        char list[1024];
        list_options(skipped, n_skip, list, sizeof list);
        fprintf(stderr, "trainsim %s: note: recipe %s sets %s, which %s does not take: left out\n", s->cmd,
                r->name, list, s->cmd);
    }
    recipe_free(r);
    return rc;
}
