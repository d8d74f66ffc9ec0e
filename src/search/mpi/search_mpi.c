/*
 * search_mpi.c — the search over MPI ranks (compiled only when MPI is
 * found; see src/search/module.cmake). Every rank builds the same plan
 * space and runs the chunks it owns (chunk % ranks == rank) with its own
 * threads; rank 0 receives every rank's top-k (and, when keep_all, every
 * simulated point) and merges them with search_merge, which re-ranks with
 * the stable key: the result is identical to a single process.
 *
 * MPI is initialised only when the process was started by a launcher
 * (mpirun/srun set OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK), so a plain
 * `trainsim sweep` never touches MPI. Points travel as raw bytes: all ranks
 * run the same binary (same struct layout).
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/search.h"

enum { TAG_HEAD = 7101, TAG_TOP, TAG_ALL, PIECE = 1 << 20 /* points per message */ };

static bool launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

void search_mpi_init(int *argc, char ***argv, int *rank, int *ranks)
{
    *rank = 0;
    *ranks = 1;
    if (!launched()) return;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, ranks);
}

void search_mpi_finalize(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Finalize();
}

typedef struct Head {
    SearchStats stats;
    int64_t n_top, n_all;
    int32_t status;
} Head;

static void send_points(const SearchPoint *p, int64_t n, int tag)
{
    for (int64_t off = 0; off < n; off += PIECE) {
        int64_t k = n - off < PIECE ? n - off : PIECE;
        MPI_Send(p + off, (int)(k * (int64_t)sizeof *p), MPI_BYTE, 0, tag, MPI_COMM_WORLD);
    }
}

static void recv_points(SearchPoint *p, int64_t n, int src, int tag)
{
    for (int64_t off = 0; off < n; off += PIECE) {
        int64_t k = n - off < PIECE ? n - off : PIECE;
        MPI_Recv(p + off, (int)(k * (int64_t)sizeof *p), MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

TsStatus search_mpi_run(const SearchConfig *c, const SearchEvaluator *ev, SearchResult *r, TsError *err)
{
    int init = 0;
    MPI_Initialized(&init);
    if (!init) return search_run(c, ev, r, err);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    SearchConfig mine = *c;
    mine.rank = rank;
    mine.ranks = ranks;
    if (rank != 0) mine.progress = NULL;
    SearchResult local;
    TsStatus st = search_run(&mine, ev, &local, err);
    Head h = {.stats = local.stats, .n_top = local.n_top, .n_all = local.n_all, .status = (int32_t)st};
    if (rank != 0) {
        MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, TAG_HEAD, MPI_COMM_WORLD);
        if (st == TS_OK) {
            send_points(local.top, local.n_top, TAG_TOP);
            send_points(local.all, local.n_all, TAG_ALL);
        }
        *r = (SearchResult){.stats = local.stats};
        search_result_free(&local);
        return st;
    }
    SearchResult *parts = calloc((size_t)ranks, sizeof *parts);
    if (!parts) return ts_err(err, TS_ERR_INTERNAL, "out of memory gathering the search results");
    parts[0] = local;
    TsStatus worst = st;
    for (int src = 1; src < ranks; src++) {
        Head rh;
        MPI_Recv(&rh, (int)sizeof rh, MPI_BYTE, src, TAG_HEAD, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rh.status != TS_OK) {
            if (worst == TS_OK) worst = ts_err(err, (TsStatus)rh.status, "the search failed on MPI rank %d", src);
            continue;
        }
        parts[src].stats = rh.stats;
        parts[src].top = malloc((size_t)(rh.n_top ? rh.n_top : 1) * sizeof(SearchPoint));
        parts[src].all = malloc((size_t)(rh.n_all ? rh.n_all : 1) * sizeof(SearchPoint));
        if (!parts[src].top || !parts[src].all) MPI_Abort(MPI_COMM_WORLD, 1); /* cannot receive: stop all */
        parts[src].n_top = (int)rh.n_top;
        parts[src].n_all = rh.n_all;
        recv_points(parts[src].top, rh.n_top, src, TAG_TOP);
        recv_points(parts[src].all, rh.n_all, src, TAG_ALL);
    }
    if (worst == TS_OK) worst = search_merge(c, parts, ranks, r, err);
    for (int i = 0; i < ranks; i++) search_result_free(&parts[i]);
    free(parts);
    return worst;
}
