/* Where a flush's time goes; see flush_clock.h. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "acb/flush_clock.h"

static const char *const phase_names[PHASE_COUNT] = {"plan", "pack", "headers", "data", "sort", "write", "agree"};

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sluice_acb_clock_start(struct flush_clock *c)
{
    const char *v = getenv("SLUICE_ACB_TIMING");
    c->on = v && *v && *v != '0';
    if (c->on)
        c->last = seconds_now();
}

void sluice_acb_clock_mark(struct flush_clock *c, enum flush_phase phase)
{
    if (c->on) {
        double t = seconds_now();
        c->spent[phase] += t - c->last;
        c->last = t;
    }
}

void sluice_acb_clock_print(const struct flush_clock *c, MPI_Comm comm, int naggs, int64_t sent, int64_t received,
                        const struct sluice_acb_stats *st, int64_t writes_before, int64_t rounds_before)
{
    char line[512];
    int rank, len;
    double total = 0;

    if (!c->on)
        return;
    SLUICE_PMPI(Comm_rank)(comm, &rank);
    len = snprintf(line, sizeof line, "sluice-acb: rank %d aggregators %d rounds %lld%s sent %lld received %lld writes %lld",
                   rank, naggs, (long long)(st->rounds - rounds_before), st->own ? " own" : "", (long long)sent,
                   (long long)received, (long long)(st->writes - writes_before));
    for (int i = 0; i < PHASE_COUNT && len < (int)sizeof line; i++) {
        total += c->spent[i];
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %.4f", phase_names[i], c->spent[i]);
    }
    if (len < (int)sizeof line)
        snprintf(line + len, sizeof line - (size_t)len, " total %.4f\n", total);
    fputs(line, stderr);
}
