/* TEMPORARY: replaced by the graph builders. */
#include "trainsim/graph.h"
#include <string.h>
bool graph_naming_parse(const char *s, GraphNaming *out)
{
    if (strcmp(s, "megatron") == 0) { *out = GRAPH_NAMING_MEGATRON; return true; }
    if (strcmp(s, "hf") == 0) { *out = GRAPH_NAMING_HF; return true; }
    if (strcmp(s, "deepspeed") == 0) { *out = GRAPH_NAMING_DEEPSPEED; return true; }
    return false;
}
