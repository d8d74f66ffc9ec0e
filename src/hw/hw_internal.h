/* hw_internal.h — helpers shared by the hw sources (not public). */
#ifndef TRAINSIM_HW_INTERNAL_H
#define TRAINSIM_HW_INTERNAL_H

#include "trainsim/hw.h"

#include <jansson.h>

/* Resolve a preset name in <data>/<sub>/ or accept a path to a file. On an
 * unknown name: TS_ERR_INPUT listing the presets of `sub`. */
TsStatus hw_resolve(const char *sub, const char *what, const char *name_or_path, char *path,
                    size_t cap, TsError *err);
/* Sorted preset names of the JSON files in <data>/<sub>/. */
int hw_list_names(const char *sub, char names[][64], int cap);
/* Reject keys of obj not in allowed (NULL-terminated), positioned, with a
 * "did you mean" hint. prefix is the dotted path of obj ("" at top). */
TsStatus hw_check_keys(const TsJsonDoc *doc, json_t *obj, const char *prefix,
                       const char *const *allowed, TsError *err);
/* Require "format": fmt and "version": 1 (positioned errors otherwise). */
TsStatus hw_check_format(const TsJsonDoc *doc, const char *fmt, TsError *err);
/* Positioned error at a dotted path. */
TsStatus hw_err_path(const TsJsonDoc *doc, const char *path, TsError *err, const char *msg,
                     const char *hint);
/* Get an object member (must be an object when present); *out NULL if absent. */
TsStatus hw_json_obj(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, json_t **out, TsError *err);

#endif
