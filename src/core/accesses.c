/* The four most frequent accesses; see accesses.h. */
#include "core/accesses.h"

#include <string.h>

/* Tuples in numeric order, element by element. */
static int tuple_cmp(const int64_t *a, const int64_t *b)
{
    for (int i = 0; i < SLUICE_ACCESS_VALS; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

static uint64_t access_key(const int64_t *v)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < SLUICE_ACCESS_VALS; i++) {
        h ^= (uint64_t)v[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 33);
}

void sluice_access_count(struct sluice_access_table *t, int64_t *top, int64_t *cnt, const int64_t *v)
{
    uint32_t i = 0;
    int64_t freq;
    int j = 0;
    const size_t tuple = sizeof(int64_t) * SLUICE_ACCESS_VALS;

    /* Listed already (the usual case): its count lives in the record, the
     * table's is brought up to date when it leaves the four. */
    if (v[0] != 0)
        while (j < 4 && !(cnt[j] > 0 && memcmp(&top[j * SLUICE_ACCESS_VALS], v, tuple) == 0))
            j++;
    if (v[0] != 0 && j < 4) {
        freq = ++cnt[j];
    } else {
        uint64_t key = access_key(v);
        while (i < t->n && t->key[i] != key)
            i++;
        if (i == t->n) {
            if (i == SLUICE_CVAL_SLOTS)
                return;
            t->key[i] = key;
            t->freq[i] = 0;
            t->n = i + 1;
        }
        freq = ++t->freq[i];
        if (v[0] == 0)
            return;
        /* not listed: it takes the fourth place if it beats it */
        if (cnt[3] > freq || (cnt[3] == freq && tuple_cmp(&top[3 * SLUICE_ACCESS_VALS], v) > 0))
            return;
        if (cnt[3] > 0) {   /* the one it displaces keeps its count in the table */
            uint64_t out = access_key(&top[3 * SLUICE_ACCESS_VALS]);
            for (uint32_t k = 0; k < t->n; k++)
                if (t->key[k] == out)
                    t->freq[k] = (uint32_t)cnt[3];
        }
        j = 3;
        memcpy(&top[3 * SLUICE_ACCESS_VALS], v, tuple);
        cnt[3] = freq;
    }
    /* move up past entries it now beats */
    for (; j > 0; j--) {
        int64_t *prev = &top[(j - 1) * SLUICE_ACCESS_VALS], *cur = &top[j * SLUICE_ACCESS_VALS];
        int64_t tmp[SLUICE_ACCESS_VALS];
        if (cnt[j - 1] > cnt[j] || (cnt[j - 1] == cnt[j] && tuple_cmp(prev, cur) >= 0))
            break;
        memcpy(tmp, prev, sizeof tmp);
        memcpy(prev, cur, sizeof tmp);
        memcpy(cur, tmp, sizeof tmp);
        int64_t c = cnt[j - 1];
        cnt[j - 1] = cnt[j];
        cnt[j] = c;
    }
}
