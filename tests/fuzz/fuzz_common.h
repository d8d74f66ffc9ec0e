/*
 * fuzz_common.h — helpers shared by the libFuzzer harnesses in tests/fuzz/.
 *
 * Each harness (fuzz_<target>.c) defines LLVMFuzzerTestOneInput and calls a
 * PUBLIC library entry point on the fuzzer's bytes. Parsers that read text
 * from memory get a NUL-terminated copy (fz_cstr); parsers that only take a
 * path get the bytes written to a per-process temporary file (fz_tmpfile,
 * created once with mkstemps and rewritten for every input).
 *
 * A harness never prints; libFuzzer reports crashes, sanitizer findings,
 * leaks (-detect_leaks=1 by default) and timeouts.
 */
#ifndef TS_FUZZ_COMMON_H
#define TS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainsim/common.h"

/* Malloc'd NUL-terminated copy of the input (embedded NULs kept: text
 * parsers then see a shorter string, as they would from ts_read_file). */
static inline char *fz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static char fz_path_[4][128];
static int fz_npaths_;

static void fz_cleanup_(void)
{
    for (int i = 0; i < fz_npaths_; i++) unlink(fz_path_[i]);
}

/* Write the bytes to a temporary file whose name ends with `suffix`
 * (".json", ".txt"); slot 0..3 lets a harness keep several files. The same
 * file is reused for every input and removed at exit. */
static inline const char *fz_tmpfile_slot(int slot, const uint8_t *data, size_t size, const char *suffix)
{
    if (!fz_path_[slot][0]) {
        snprintf(fz_path_[slot], sizeof fz_path_[slot], "/tmp/tsfuzz_%d_XXXXXX%s", slot, suffix);
        int fd = mkstemps(fz_path_[slot], (int)strlen(suffix));
        if (fd < 0) abort();
        close(fd);
        if (fz_npaths_ == 0) atexit(fz_cleanup_);
        fz_npaths_++;
    }
    FILE *fp = fopen(fz_path_[slot], "wb");
    if (!fp) abort();
    if (size && fwrite(data, 1, size, fp) != size) abort();
    fclose(fp);
    return fz_path_[slot];
}

static inline const char *fz_tmpfile(const uint8_t *data, size_t size, const char *suffix)
{
    return fz_tmpfile_slot(0, data, size, suffix);
}

/* Every error a parser returns must be a proper value: a known code and a
 * NUL-terminated message. Rendering it exercises ts_err_format on whatever
 * source line the parser copied. */
static inline void fz_check_error(TsStatus st, const TsError *err)
{
    if (st == TS_OK) return;
    if (st != TS_ERR_INTERNAL && st != TS_ERR_USAGE && st != TS_ERR_INPUT && st != TS_ERR_PLAN) abort();
    if (err->code != st) abort();
    if (!memchr(err->msg, '\0', sizeof err->msg) || !err->msg[0]) abort();
    TsBuf b = {0};
    ts_err_format(err, &b);
    ts_buf_free(&b);
}

#endif
