/*
 * trainsim/recipe.h — published training runs as data: data/recipes/<name>.json.
 *
 * A recipe is one run someone published (a paper's table row, a launch
 * script) written as the command-line options that reproduce it, each with
 * the source of its value. The knobs are keyed by option name, so an option
 * added to the command line later needs no code here: a recipe names it and
 * the command that reads the recipe applies it like the same option typed
 * (src/cli/cli_recipe.c). This subsystem only reads and checks the file; it
 * knows no option table. Schema "trainsim-recipe" v1 (docs/recipes.md):
 *
 *     {"format": "trainsim-recipe", "version": 1,
 *      "description": "DeepSeek-V3 pre-training, 2048 H800",
 *      "knobs": {
 *        "model": {"value": "deepseek-v3", "source": "arXiv 2412.19437 §4.2"},
 *        "pp":    {"value": 16, "source": "arXiv 2412.19437 §3.2: 16-way PP"},
 *        "uneven-stages": {"value": true, "source": "..."}},
 *      "notes": ["DualPipe schedule (§3.2.1): no option yet"]}
 *
 * A knob's value is a string, an integer, a number or a boolean; it keeps
 * the text a command line would give (16 -> "16", true -> "true") and the
 * position of the value in the file, so that a command can point at it when
 * the value does not suit its option. Option names are lower-case words
 * joined by '-'; "recipe" itself is not a knob (no recipe includes another).
 *
 * Ownership: recipe_load returns a Recipe the caller frees with recipe_free
 * (NULL is a no-op); every string in it lives as long as the Recipe.
 * Failure: TS_ERR_INPUT at file:line:col with a hint for a malformed file,
 * an unknown field or a bad knob; for an unknown recipe name, a hint with
 * the nearest names; TS_ERR_INTERNAL when out of memory.
 *
 * Example:
 *     Recipe *r;
 *     if (recipe_load("deepseek-v3", &r, &err) == TS_OK) {
 *         const RecipeKnob *k = recipe_knob(r, "pp");   // k->text "16"
 *         recipe_free(r);
 *     }
 */
#ifndef TRAINSIM_RECIPE_H
#define TRAINSIM_RECIPE_H

#include "trainsim/common.h"

#define RECIPE_FORMAT_NAME "trainsim-recipe"
#define RECIPE_FORMAT_VERSION 1

/* The JSON type of a knob's value: X(NAME, "what a message calls it"). */
#define RECIPE_VALUE_LIST(X)       \
    X(STRING, "a string")          \
    X(INTEGER, "an integer")       \
    X(NUMBER, "a number")          \
    X(BOOLEAN, "true or false")
typedef enum {
#define X(e, n) RECIPE_##e,
    RECIPE_VALUE_LIST(X)
#undef X
    RECIPE_VALUE_COUNT
} RecipeValue;
/* "an integer", ... ("?" out of range). */
const char *recipe_value_name(RecipeValue v);

typedef struct RecipeKnob {
    const char *option;  /* a command-line option without "--", e.g. "pp" */
    RecipeValue type;    /* the JSON type of the value, e.g. RECIPE_INTEGER */
    const char *text;    /* the value as a command line writes it: "16", "fp8", "0.05", "true" */
    const char *source;  /* where the value comes from, e.g. "arXiv 2412.19437 §3.2" */
    int line, col;       /* the value's position in the file (1-based) */
    int key_line, key_col; /* the knob's position (its object) in the file */
} RecipeKnob;

typedef struct Recipe {
    char name[64];           /* the file name without .json, e.g. "deepseek-v3" */
    char path[1100];         /* the file read, e.g. "<data>/recipes/deepseek-v3.json" */
    const char *description; /* one line, e.g. "DeepSeek-V3 pre-training, 2048 H800" */
    const RecipeKnob *knobs; /* in file order */
    int n_knobs;
    const char *const *notes; /* what the run also did that no option expresses */
    int n_notes;
    const char *text;        /* the file's text, for errors that point into it */
    TsArena *arena;          /* owns all of the above */
} Recipe;

/* A recipe by name (data/recipes/<name>.json) or by path (a name with a '/'
 * or ending in .json). *out is the caller's (recipe_free); NULL on failure. */
TsStatus recipe_load(const char *name_or_path, Recipe **out, TsError *err);
void recipe_free(Recipe *r);
/* The knob for `option`, or NULL. */
const RecipeKnob *recipe_knob(const Recipe *r, const char *option);

/* The recipe names in data/recipes, sorted; returns how many (at most cap). */
int recipe_names(char names[][64], int cap);
/* Up to cap names near `name` (edit distance <= 3, or a prefix of 3+
 * characters), nearest first; returns how many. */
int recipe_similar(const char *name, char out[][64], int cap);

#endif
