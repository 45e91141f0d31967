/*
 * Fuzz target for the log reader and the sluice-logdump printers.
 *
 * Each input is read twice: as it is, and with its CRCs and file size made
 * to agree with its bytes, so that mutations get past the checksums and
 * into the region parsers. A log that is read is printed in both forms (to
 * /dev/null); a log that is not must come with a one-line message that
 * starts with its name.
 *
 * Built with -fsanitize=fuzzer for libFuzzer, or linked with onefile.c to
 * replay files without it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32.h"
#include "sluice/sluice_logfmt.h"
#include "sluice/sluice_logreader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* From tools/sluice-logdump.c (built with SLUICE_LOGDUMP_NO_MAIN). */
int sluice_logdump_json(FILE *out, const char *name, const struct sluice_log *log);
int sluice_logdump_text(FILE *out, const char *name, const struct sluice_log *log);

static FILE *devnull;

static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* Make the header's file size and every CRC it can reach agree with the
 * bytes. */
static void fix_checksums(unsigned char *d, size_t len)
{
    if (len < SLUICE_LOG_HEADER_SIZE)
        return;
    uint64_t nreg = get_le(d + 16, 4), table_off = get_le(d + 32, 4);
    put_le(d + 24, len, 8);
    if (nreg > SLUICE_LOG_MAX_REGIONS || table_off + nreg * SLUICE_LOG_REGION_ENTRY_SIZE > len)
        return;
    for (uint64_t i = 0; i < nreg; i++) {
        unsigned char *e = d + table_off + i * SLUICE_LOG_REGION_ENTRY_SIZE;
        uint64_t off = get_le(e + 8, 8), rlen = get_le(e + 16, 8);
        if (off <= len && rlen <= len - off)
            put_le(e + 24, sluice_crc32(0, d + off, (size_t)rlen), 4);
    }
    uint32_t crc = sluice_crc32(0, d, 60);
    crc = sluice_crc32(crc, d + table_off, (size_t)(nreg * SLUICE_LOG_REGION_ENTRY_SIZE));
    put_le(d + 60, crc, 4);
}

static void check(const void *data, size_t size)
{
    static const char name[] = "fuzz.sluice";
    struct sluice_log *log = NULL;
    char err[512];

    memset(err, 'x', sizeof err);
    if (sluice_logreader_parse(data, size, name, &log, err, sizeof err) < 0) {
        /* One line naming the input, and no log returned. */
        if (log || strncmp(err, "fuzz.sluice: ", 13) != 0 || strlen(err) <= 13 || strchr(err, '\n'))
            abort();
        return;
    }
    if (!log)
        abort();
    const struct sluice_log_process *pr = sluice_log_process(log);
    if (pr->version_major < SLUICE_LOG_OLDEST_MAJOR || pr->version_major > SLUICE_LOG_VERSION_MAJOR)
        abort();
    for (size_t i = 0; i < sluice_log_nrecords(log); i++) {
        const struct sluice_log_record *r = sluice_log_record_at(log, i);
        if (!r || !r->module || !r->path.ptr || r->path.ptr[r->path.len] != '\0')
            abort();
        /* A name is found by name (unless it holds a NUL byte). */
        int is_float;
        const struct sluice_log_string *n0 = r->module->ni ? &r->module->int_names[0] : NULL;
        if (n0 && strlen(n0->ptr) == n0->len && sluice_log_counter_index(r->module, n0->ptr, &is_float) < 0)
            abort();
    }
    if (sluice_log_info_get(log, "exe") && sluice_log_ninfo(log) == 0)
        abort();
    const struct sluice_log_module *m0 = sluice_log_module_at(log, 0);
    if (m0 && strlen(m0->name.ptr) == m0->name.len && !sluice_log_module_by_name(log, m0->name.ptr))
        abort();
    if (sluice_logdump_json(devnull, name, log) < 0 || sluice_logdump_text(devnull, name, log) < 0)
        abort(); /* out of memory on an input of a few kilobytes */
    sluice_logreader_close(log);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        if (!devnull)
            abort();
    }
    check(data, size);
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    fix_checksums(copy, size);
    check(copy, size);
    free(copy);
    return 0;
}
