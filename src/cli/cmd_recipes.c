/* trainsim recipes — list the published runs in data/recipes (recipe.h), or
 * show one: its knobs with their sources, what no option expresses, and the
 * command line it stands for. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "trainsim/recipe.h"

#define RECIPES_MAX 512
#define LIST_COLUMNS 72

/* Code points of a UTF-8 string. */
static int width(const char *s)
{
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* s cut to at most cols code points, "..." marking a cut. */
static void fit(const char *s, int cols, TsBuf *b)
{
    if (width(s) <= cols) {
        ts_buf_puts(b, s);
        return;
    }
    const char *p = s;
    for (int n = 0; *p && n < cols - 3; n++)
        for (p++; ((unsigned char)*p & 0xC0) == 0x80; p++) continue; /* the rest of the code point */
    ts_buf_append(b, s, (size_t)(p - s));
    ts_buf_puts(b, "...");
}

static const char *knob_text(const Recipe *r, const char *option, const char *none)
{
    const RecipeKnob *k = recipe_knob(r, option);
    return k ? k->text : none;
}

static void list_text(Recipe *const *rs, int n, TsBuf *b)
{
    int wn = 4, wm = 5;
    for (int i = 0; i < n; i++) {
        int a = width(rs[i]->name), m = width(knob_text(rs[i], "model", "-"));
        if (a > wn) wn = a;
        if (m > wm) wm = m;
    }
    int wd = LIST_COLUMNS - wn - wm - 5 - 3;
    ts_buf_printf(b, "%-*s %-*s %5s %s\n", wn, "name", wm, "model", "gpus", "description");
    for (int i = 0; i < n; i++) {
        const Recipe *r = rs[i];
        ts_buf_printf(b, "%-*s %-*s %5s ", wn, r->name, wm, knob_text(r, "model", "-"), knob_text(r, "gpus", "-"));
        fit(r->description, wd < 12 ? 12 : wd, b);
        ts_buf_puts(b, "\n");
    }
}

/* One knob as it would be typed: "--pp 16", "--uneven-stages". */
static void knob_arg(const RecipeKnob *k, TsBuf *b)
{
    if (k->type == RECIPE_BOOLEAN) {
        ts_buf_printf(b, "--%s%s", k->option, strcmp(k->text, "true") ? " (false: not given)" : "");
        return;
    }
    bool quote = strpbrk(k->text, " \t'\"$\\;&|<>()*?") != NULL;
    ts_buf_printf(b, quote ? "--%s '%s'" : "--%s %s", k->option, k->text);
}

static void show_text(const Recipe *r, TsBuf *b)
{
    ts_buf_printf(b, "recipe %s: %s\n\nknobs (options given after --recipe override them):\n", r->name, r->description);
    for (int i = 0; i < r->n_knobs; i++) {
        ts_buf_puts(b, "  ");
        knob_arg(&r->knobs[i], b);
        ts_buf_printf(b, "\n      %s\n", r->knobs[i].source);
    }
    if (r->n_notes) ts_buf_puts(b, "\nwhat the run also did that no option expresses:\n");
    for (int i = 0; i < r->n_notes; i++) ts_buf_printf(b, "  - %s\n", r->notes[i]);
    ts_buf_printf(b, "\nas options: trainsim simulate --recipe %s, or\n  trainsim simulate", r->name);
    for (int i = 0; i < r->n_knobs; i++) {
        const RecipeKnob *k = &r->knobs[i];
        if (k->type == RECIPE_BOOLEAN && strcmp(k->text, "true")) continue;
        ts_buf_puts(b, " ");
        knob_arg(k, b);
    }
    ts_buf_puts(b, "\n");
}

static void recipe_json(const Recipe *r, TsBuf *b)
{
    ts_buf_puts(b, "{\"name\": ");
    ts_json_escape(b, r->name);
    ts_buf_puts(b, ", \"description\": ");
    ts_json_escape(b, r->description);
    ts_buf_puts(b, ", \"knobs\": [");
    for (int i = 0; i < r->n_knobs; i++) {
        const RecipeKnob *k = &r->knobs[i];
        ts_buf_printf(b, "%s\n   {\"option\": ", i ? "," : "");
        ts_json_escape(b, k->option);
        ts_buf_puts(b, ", \"value\": ");
        if (k->type == RECIPE_STRING) ts_json_escape(b, k->text);
        else ts_buf_puts(b, k->text); /* a JSON number or true/false already */
        ts_buf_puts(b, ", \"source\": ");
        ts_json_escape(b, k->source);
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, "],\n  \"notes\": [");
    for (int i = 0; i < r->n_notes; i++) {
        if (i) ts_buf_puts(b, ", ");
        ts_json_escape(b, r->notes[i]);
    }
    ts_buf_puts(b, "]}");
}

static void list_json(Recipe *const *rs, int n, TsBuf *b)
{
    ts_buf_printf(b, "{\"format\": \"trainsim-recipes\", \"version\": 1, \"recipes\": [");
    for (int i = 0; i < n; i++) {
        ts_buf_puts(b, i ? ",\n " : "\n ");
        recipe_json(rs[i], b);
    }
    ts_buf_puts(b, "\n]}\n");
}

/* Every recipe in data/recipes, or the one named; *n how many. NULL and the
 * error printed (*rc its exit code) when one does not load. */
static Recipe **load_all(const char *name, int *n, int *rc)
{
    char(*names)[64] = name ? NULL : malloc(RECIPES_MAX * sizeof *names);
    int k = name ? 1 : names ? recipe_names(names, RECIPES_MAX) : 0;
    Recipe **rs = calloc((size_t)(k ? k : 1), sizeof *rs);
    *rc = rs && (name || names) ? 0 : 1;
    for (int i = 0; i < k && !*rc; i++) {
        TsError err = {0};
        if (recipe_load(name ? name : names[i], &rs[i], &err) != TS_OK) *rc = cli_fail(&err);
    }
    free(names);
    if (*rc) {
        for (int i = 0; rs && i < k; i++) recipe_free(rs[i]);
        free(rs);
        return NULL;
    }
    *n = k;
    return rs;
}

int cmd_recipes(int argc, char **argv)
{
    bool json = false;
    CliSpec s = {.cmd = "recipes",
                 .usage = "trainsim recipes [NAME|FILE] [--json]",
                 .summary = "List the published training runs in data/recipes: name, model, GPUs and what the run "
                            "was. With a NAME: its knobs (the options it sets) with the source of each value, what "
                            "the run also did that no option expresses, and the command line it stands for. "
                            "'trainsim simulate --recipe NAME' (or sweep, memory, workload) starts from one; "
                            "docs/recipes.md describes the format.",
                 .max_positional = 1};
    cli_add(&s, "json", CLI_FLAG, &json, NULL,
            "print JSON (format trainsim-recipes v1): every knob with its value and source");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    const char *name = s.n_positional ? s.positional[0] : NULL;
    int n = 0;
    Recipe **rs = load_all(name, &n, &rc);
    if (!rs) return rc;
    TsBuf b = {0};
    if (json) list_json(rs, n, &b);
    else if (name) show_text(rs[0], &b);
    else list_text(rs, n, &b);
    rc = cli_emit(NULL, &b);
    ts_buf_free(&b);
    for (int i = 0; i < n; i++) recipe_free(rs[i]);
    free(rs);
    return rc;
}
