/* fuzz_cli — the command line itself. The input is split into argv at
 * newlines and NULs (at most 32 words of 256 bytes) and handed to the CLI's
 * main() (included below as ts_cli_main), so every subcommand's
 * option table, value parsing and the model/plan loaders behind it are
 * reached. The harness runs in a private scratch directory and rejects any
 * word containing '/', so output files (--output x) land there and are
 * removed after each input; stdout/stderr are closed by -close_fd_mask.
 *
 * Sizes: a word that is a number between 4096 and 1e12 makes the harness skip
 * the input. Such values are legitimate but slow under ASan (a 10^5-layer
 * graph takes ~1 s and 1.2 GB natively; 4096 Chakra files; 10^9
 * micro-batches) and their bounds are tested in test_robustness instead;
 * small values and absurd ones (>= 1e12, overflow territory) stay in.
 * Sweeps need --gpus <= 64 for the same reason. A recipe brings its own
 * sizes (up to 3072 GPUs), past these checks: with --recipe only simulate
 * and memory run (a plan's costing is fast at any size). */
#include "fuzz_common.h"

#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

/* The CLI's own main(), renamed; fuzz.cmake leaves src/cli/main.c out of
 * this target's sources so it is compiled only here. */
#define main ts_cli_main
#include "main.c"
#undef main

static char scratch[128];

static bool slow_size(const char *w)
{
    const char *eq = strchr(w, '=');
    if (eq) w = eq + 1;
    char *end;
    double v = strtod(w, &end);
    if (end == w) return false;
    v = fabs(v);
    return v > 4096 && v < 1e12;
}

static void clear_scratch(void)
{
    DIR *d = opendir(".");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(e->d_name);
    closedir(d);
}

static void rm_scratch(void)
{
    clear_scratch();
    if (chdir("/tmp") == 0) rmdir(scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!scratch[0]) {
        snprintf(scratch, sizeof scratch, "/tmp/tsfuzz_cli_XXXXXX");
        if (!mkdtemp(scratch) || chdir(scratch) != 0) abort();
        atexit(rm_scratch);
    }
    if (size > 4096 || memchr(data, '/', size)) return 0;
    char *text = fz_cstr(data, size);
    char *argv[34];
    int argc = 0;
    argv[argc++] = "trainsim";
    char *p = text, *end = text + size;
    while (p < end && argc < 33) {
        char *q = p;
        while (q < end && *q != '\n' && *q != '\0') q++;
        *q = '\0';
        if (strlen(p) > 256) p[256] = '\0';
        if (slow_size(p)) {
            free(text);
            return 0;
        }
        argv[argc++] = p;
        p = q + 1;
    }
    argv[argc] = NULL;
    bool recipe = false;
    for (int i = 2; i < argc; i++) recipe |= strncmp(argv[i], "--recipe", 8) == 0;
    if (recipe && strcmp(argv[1], "simulate") && strcmp(argv[1], "memory")) {
        free(text);
        return 0;
    }
    /* A plan search over 1024 GPUs (16680 plans, 0.4 s natively) outlasts
     * the 10 s per-input timeout under ASan + coverage: sweeps are fuzzed
     * only with --gpus <= 64 (a few thousand candidates). */
    if (argc > 1 && strcmp(argv[1], "sweep") == 0) {
        long gpus = 0;
        for (int i = 2; i < argc; i++) {
            if (strncmp(argv[i], "--gpus=", 7) == 0) gpus = strtol(argv[i] + 7, NULL, 10);
            else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc) gpus = strtol(argv[i + 1], NULL, 10);
        }
        if (gpus < 1 || gpus > 64) {
            free(text);
            return 0;
        }
    }
    int rc = ts_cli_main(argc, argv);
    if (rc < 0 || rc > 4) abort(); /* exit codes are 0..4 (DESIGN.md) */
    fflush(stdout);
    clear_scratch();
    free(text);
    return 0;
}
