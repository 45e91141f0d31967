/*
 * ACB settings from MPI_Info hints (see acb.h). A malformed or
 * non-positive value is ignored: a hint must never make a write fail.
 */
#include <stdlib.h>

#include "acb/acb.h"

static int parse_size(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);

    if (end == s || v <= 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

static void hint(MPI_Info info, const char *key, int64_t *field, int64_t max)
{
    char value[64];
    int flag = 0;
    int64_t v;

    if (SLUICE_PMPI(Info_get)(info, key, (int)sizeof value - 1, value, &flag) == MPI_SUCCESS && flag &&
        parse_size(value, &v) == 0 && v <= max)
        *field = v;
}

/* ROMIO's cb_config_list in its node-agnostic forms: "*:N" (N aggregators
 * on every node) and "*:*" (every rank); lists naming hosts are ignored. */
static void config_list(MPI_Info info, int64_t *per_node)
{
    char value[64];
    int flag = 0;
    int64_t v;

    if (SLUICE_PMPI(Info_get)(info, "cb_config_list", (int)sizeof value - 1, value, &flag) != MPI_SUCCESS || !flag ||
        value[0] != '*' || value[1] != ':')
        return;
    if (value[2] == '*' && value[3] == '\0')
        *per_node = 1 << 20;
    else if (parse_size(value + 2, &v) == 0 && v <= 1 << 20)
        *per_node = v;
}

void sluice_acb_hints_apply(struct sluice_acb_hints *h, MPI_Info info)
{
    if (h->stripe_size <= 0)
        h->stripe_size = SLUICE_ACB_DEFAULT_STRIPE;
    if (h->write_size <= 0)
        h->write_size = SLUICE_ACB_DEFAULT_WRITE;
    if (h->max_memory <= 0)
        h->max_memory = SLUICE_ACB_DEFAULT_MEMORY;
    if (h->direct_size <= 0)
        h->direct_size = SLUICE_ACB_DEFAULT_DIRECT;
    if (h->buffer_size <= 0)
        h->buffer_size = SLUICE_ACB_DEFAULT_BUFFER;
    if (info != SLUICE_MPI_INFO_NULL) {
        hint(info, "cb_nodes", &h->aggregators, 1 << 20);
        hint(info, "sluice_acb_aggregators", &h->aggregators, 1 << 20);
        hint(info, "striping_unit", &h->stripe_size, (int64_t)1 << 30);
        hint(info, "sluice_acb_stripe_size", &h->stripe_size, (int64_t)1 << 30);
        hint(info, "sluice_acb_write_size", &h->write_size, (int64_t)1 << 30);
        hint(info, "sluice_acb_max_memory", &h->max_memory, INT64_MAX);
        hint(info, "sluice_acb_direct_size", &h->direct_size, INT64_MAX);
        hint(info, "cb_buffer_size", &h->buffer_size, (int64_t)1 << 30);
        config_list(info, &h->per_node);
    }
    if (h->per_node <= 0)
        h->per_node = 1;
    /* Writes end on stripe boundaries only if they are whole stripes. */
    if (h->write_size < h->stripe_size)
        h->write_size = h->stripe_size;
    h->write_size -= h->write_size % h->stripe_size;
    /* A round holds whole stripes. */
    if (h->buffer_size < h->stripe_size)
        h->buffer_size = h->stripe_size;
    h->buffer_size -= h->buffer_size % h->stripe_size;
}
