/* A rank's pending writes written as they are, coalesced into runs (see
 * acb.h): the engine's own writes and every fallback's. */
#include <stdlib.h>
#include <string.h>

#include "acb/acb.h"
#include "acb/plan.h"

/* Write the disjoint, ascending extents of p as runs of touching extents,
 * each cut where a multiple of write_size falls. */
int sluice_acb_write_runs(const struct sluice_acb_pending *p, int64_t write_size, const struct sluice_acb_writer *w,
                      struct sluice_acb_stats *st)
{
    const struct sluice_acb_extent *e = p->ext;
    unsigned char *scratch = NULL;
    int rc = MPI_SUCCESS;
    size_t i = 0;

    while (i < p->n && rc == MPI_SUCCESS) {
        size_t j = i + 1, k = i;
        int64_t run_end = e[i].off + e[i].len, pos = e[i].off;
        while (j < p->n && e[j].off == run_end)
            run_end += e[j++].len;
        while (pos < run_end && rc == MPI_SUCCESS) {
            int64_t wend = sluice_acb_plan_write_end(write_size, pos, run_end);
            const unsigned char *src;
            while (e[k].off + e[k].len <= pos)
                k++;
            if (wend <= e[k].off + e[k].len) {
                src = e[k].data + (pos - e[k].off);
            } else {
                if (!scratch && (scratch = malloc((size_t)write_size)) == NULL) {
                    rc = MPI_ERR_NO_MEM;
                    break;
                }
                for (size_t m = k; m < j && e[m].off < wend; m++) {
                    int64_t from = e[m].off > pos ? e[m].off : pos;
                    int64_t to = e[m].off + e[m].len < wend ? e[m].off + e[m].len : wend;
                    memcpy(scratch + (from - pos), e[m].data + (from - e[m].off), (size_t)(to - from));
                }
                src = scratch;
            }
            rc = w->write_at(w->ctx, pos, src, wend - pos);
            if (rc == MPI_SUCCESS) {
                st->writes++;
                st->bytes += wend - pos;
            }
            pos = wend;
        }
        i = j;
    }
    free(scratch);
    return rc;
}
int sluice_acb_write_own(struct sluice_acb_pending *p, const struct sluice_acb_hints *h,
                         const struct sluice_acb_writer *w, struct sluice_acb_stats *st)
{
    int rc = sluice_acb_pending_normalize(p) == 0 ? MPI_SUCCESS : MPI_ERR_NO_MEM;

    if (rc == MPI_SUCCESS)
        rc = sluice_acb_write_runs(p, h->write_size, w, st);
    sluice_acb_pending_clear(p);
    return rc;
}
