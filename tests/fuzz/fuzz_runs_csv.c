/* fuzz_runs_csv — the runs file of build/accuracy --runs (bench/runs_csv.c):
 * RFC 4180 records, the header's columns, every cell's checks. The bytes go
 * to a file (runs_load takes a path); a file it accepts must give rows whose
 * every cell is a string, and its required cells non-empty. */
#include "fuzz_common.h"

#include "runs_csv.h"

static RunRow rows[RUNS_MAXROW];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".csv");
    int n = -1, rc = runs_load(path, rows, &n);
    if (rc != 0 && n != 0) abort();
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < RUNS_NCOL; c++)
            if (!rows[i].f[c]) abort();
        if (!rows[i].f[runs_col("id")][0] || !rows[i].f[runs_col("value")][0]) abort();
    }
    runs_free(rows, n);
    return 0;
}
