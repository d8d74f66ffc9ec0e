/* File input, atomic output (temp name + rename), and the preset directory. */
#include "trainsim/common.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TS_INSTALL_DATA_DIR
#define TS_INSTALL_DATA_DIR "/usr/local/share/trainsim"
#endif
#ifndef TS_SOURCE_DATA_DIR
#define TS_SOURCE_DATA_DIR "data"
#endif

TsStatus ts_read_file(const char *path, size_t max_bytes, char **out, size_t *len, TsError *err)
{
    *out = NULL;
    if (len) *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        ts_err(err, TS_ERR_INPUT, "cannot open '%s': %s", path, strerror(errno));
        ts_err_hint(err, "check the path and its permissions");
        return TS_ERR_INPUT;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        ts_err(err, TS_ERR_INPUT, "'%s' is a directory, not a file", path);
        return TS_ERR_INPUT;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(fp);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory reading '%s'", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max_bytes) break;
            size_t ncap = cap * 2;
            char *p = realloc(buf, ncap);
            if (!p) {
                free(buf);
                fclose(fp);
                return ts_err(err, TS_ERR_INTERNAL, "out of memory reading '%s'", path);
            }
            buf = p;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0) break;
        if (n > max_bytes) break;
    }
    bool bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(buf);
        return ts_err(err, TS_ERR_INPUT, "cannot read '%s'", path);
    }
    if (n > max_bytes) {
        free(buf);
        ts_err(err, TS_ERR_INPUT, "'%s' is larger than the %zu-byte limit", path, max_bytes);
        snprintf(err ? err->file : (char[1]){0}, err ? sizeof err->file : 1, "%s", path);
        ts_err_hint(err, "trainsim reads inputs whole; split or trim the file");
        return TS_ERR_INPUT;
    }
    buf[n] = '\0';
    *out = buf;
    if (len) *len = n;
    return TS_OK;
}

static TsStatus check_dir(const char *path, TsError *err)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    const char *dir = dirname(tmp);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        ts_err(err, TS_ERR_USAGE, "cannot write '%s': directory '%s' does not exist", path, dir);
        ts_err_hint(err, "create the directory first (mkdir -p %s)", dir);
        return TS_ERR_USAGE;
    }
    return TS_OK;
}

TsStatus ts_out_open(TsOutFile *o, const char *path, TsError *err)
{
    memset(o, 0, sizeof *o);
    if (strlen(path) >= sizeof o->path)
        return ts_err(err, TS_ERR_USAGE, "output path is too long: '%.64s...'", path);
    TsStatus st = check_dir(path, err);
    if (st) return st;
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid());
    o->fp = fopen(o->tmp, "wb");
    if (!o->fp) {
        ts_err(err, TS_ERR_USAGE, "cannot write '%s': %s", path, strerror(errno));
        return TS_ERR_USAGE;
    }
    return TS_OK;
}

TsStatus ts_out_commit(TsOutFile *o, TsError *err)
{
    if (!o->fp) return ts_err(err, TS_ERR_INTERNAL, "output file was not open");
    bool bad = ferror(o->fp) != 0;
    if (fclose(o->fp) != 0) bad = true;
    o->fp = NULL;
    if (bad) {
        unlink(o->tmp);
        return ts_err(err, TS_ERR_INTERNAL, "write error on '%s' (disk full?)", o->path);
    }
    if (rename(o->tmp, o->path) != 0) {
        int e = errno;
        unlink(o->tmp);
        return ts_err(err, TS_ERR_USAGE, "cannot create '%s': %s", o->path, strerror(e));
    }
    return TS_OK;
}

void ts_out_abort(TsOutFile *o)
{
    if (o->fp) {
        fclose(o->fp);
        o->fp = NULL;
    }
    if (o->tmp[0]) unlink(o->tmp);
}

TsStatus ts_write_file_atomic(const char *path, const void *data, size_t len, TsError *err)
{
    TsOutFile o;
    TsStatus st = ts_out_open(&o, path, err);
    if (st) return st;
    if (len && fwrite(data, 1, len, o.fp) != len) {
        ts_out_abort(&o);
        return ts_err(err, TS_ERR_INTERNAL, "write error on '%s'", path);
    }
    return ts_out_commit(&o, err);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Order: $TRAINSIM_DATA, <exe>/../share/trainsim (an installed tree, found
 * relative to the binary so a relocated prefix works), the source tree the
 * binary was built from, then the configured install prefix. */
const char *ts_data_dir(void)
{
    const char *env = getenv("TRAINSIM_DATA");
    if (env && *env && is_dir(env)) return env;
    static _Thread_local char rel[1024];
    char exe[900];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(rel, sizeof rel, "%s/../share/trainsim", exe);
            char models[1100];
            snprintf(models, sizeof models, "%s/models", rel);
            if (is_dir(models)) return rel;
        }
    }
    if (is_dir(TS_SOURCE_DATA_DIR "/models")) return TS_SOURCE_DATA_DIR;
    return TS_INSTALL_DATA_DIR;
}

bool ts_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool ts_data_path(const char *sub, const char *name, char *out, size_t cap)
{
    /* Names are plain identifiers: never let a preset name walk the tree. */
    if (!name[0] || strchr(name, '/') || strstr(name, "..")) return false;
    int n = snprintf(out, cap, "%s/%s/%s.json", ts_data_dir(), sub, name);
    if (n < 0 || (size_t)n >= cap) return false;
    return ts_is_file(out);
}

static int cmp_name64(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* All the names are collected and sorted before the first cap are kept, so
 * the result is the same whatever the directory order and cap. */
int ts_data_names(const char *sub, char names[][64], int cap)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", ts_data_dir(), sub);
    DIR *d = opendir(dir);
    if (!d) return 0;
    char(*all)[64] = NULL;
    size_t n = 0, acap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 6 || l - 5 >= 64 || e->d_name[0] == '.' || !ts_ends_with(e->d_name, ".json")) continue;
        if (n == acap) {
            size_t nc = acap ? 2 * acap : 64;
            void *g = realloc(all, nc * sizeof *all);
            if (!g) break; /* out of memory: the names read so far */
            all = g;
            acap = nc;
        }
        memcpy(all[n], e->d_name, l - 5);
        all[n][l - 5] = '\0';
        n++;
    }
    closedir(d);
    if (n) qsort(all, n, sizeof all[0], cmp_name64);
    int k = 0;
    for (; (size_t)k < n && k < cap; k++) memcpy(names[k], all[k], 64);
    free(all);
    return k;
}

int ts_data_similar(const char *sub, const char *name, char out[][64], int cap)
{
    enum { MAX = 1024 };
    char(*all)[64] = malloc((size_t)MAX * sizeof *all);
    int *score = malloc((size_t)MAX * sizeof *score);
    if (!all || !score) {
        free(all);
        free(score);
        return 0;
    }
    int n = ts_data_names(sub, all, MAX), k = 0;
    size_t ln = strlen(name);
    for (int i = 0; i < n; i++) {
        int d = ts_edit_distance(name, all[i]);
        bool prefix = ln >= 3 && strncmp(all[i], name, ln) == 0;
        score[i] = d <= 3 ? d : prefix ? 4 : 99;
    }
    for (int best = 0; best <= 4 && k < cap; best++)
        for (int i = 0; i < n && k < cap; i++)
            if (score[i] == best) snprintf(out[k++], 64, "%s", all[i]);
    free(all);
    free(score);
    return k;
}
