/* fuzz_recipe — a recipe file (data/recipes/*.json, "trainsim-recipe" v1)
 * read with recipe_load: every error a proper value; a recipe that loads
 * holds what recipe.h promises (options named, values as text, positions in
 * the file, sources and notes non-empty). */
#include "fuzz_common.h"

#include "trainsim/recipe.h"

static void check(const Recipe *r)
{
    if (!r->description || !r->description[0] || r->n_knobs < 1 || !r->text) abort();
    for (int i = 0; i < r->n_knobs; i++) {
        const RecipeKnob *k = &r->knobs[i];
        if (!k->option[0] || !k->text || !k->source[0] || (unsigned)k->type >= RECIPE_VALUE_COUNT) abort();
        if (k->line < 1 || k->col < 1 || k->key_line < 1 || k->key_col < 1) abort();
        if (recipe_knob(r, k->option) != k) abort(); /* options are unique */
    }
    for (int i = 0; i < r->n_notes; i++)
        if (!r->notes[i][0]) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    Recipe *r = NULL;
    TsError e = {0};
    TsStatus st = recipe_load(path, &r, &e);
    fz_check_error(st, &e);
    if (st == TS_OK) check(r);
    recipe_free(r);
    return 0;
}
