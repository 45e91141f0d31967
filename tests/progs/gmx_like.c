/*
 * The output loop of a GROMACS-like MD run, through stdio
 * (tests/python/test_real_apps.py compares its profile with strace):
 *
 *   traj.trr   one frame every step: fwrite of a 92-byte header, then
 *              fwrite of the 3 x NATOMS float coordinates;
 *   ener.log   a header line, then one fprintf a step;
 *   state.cpt  every CHECKPOINT steps, after an fflush of traj.trr and
 *              ener.log: opened "w", one fwrite of a 36-byte header and
 *              one of the positions and velocities, closed;
 *
 * then traj.trr is read back frame by frame (fread of the header, fread of
 * the coordinates), as `gmx check` does, and each frame verified. Every
 * byte written depends only on the step and the atom: the files are the
 * same in every run.
 *
 *   gmx_like DIR [FRAMES [NATOMS [CHECKPOINT]]]    (500, 1000, 100)
 *
 * With the defaults: traj.trr 1,000 fwrite (6,046,000 bytes); ener.log
 * 501 fprintf; state.cpt 5 opens, 10 fwrite (24,036 bytes each time);
 * 10 fflush; traj.trr read back with 1,000 fread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 92

struct frame_header {           /* 92 bytes, as a .trr frame header */
    char magic[12];
    int32_t step, natoms, box_size, x_size;
    float time, lambda;
    float box[9];
    int32_t pad[5];
};

_Static_assert(sizeof(struct frame_header) == HEADER, "a frame header is 92 bytes");

/* Coordinate k of atom i at a step: deterministic, no libm. */
static float coord(int step, int i, int k)
{
    uint32_t h = (uint32_t)i * 2654435761u + (uint32_t)k * 40503u;
    return (float)(h % 10000u) * 0.001f + (float)step * 0.0005f * (float)(k + 1);
}

static void fill_frame(struct frame_header *h, float *x, int step, int natoms)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, "GMX_trn_file", sizeof h->magic);
    h->step = step;
    h->natoms = natoms;
    h->box_size = 9 * (int32_t)sizeof(float);
    h->x_size = 3 * natoms * (int32_t)sizeof(float);
    h->time = (float)step * 0.002f;
    h->box[0] = h->box[4] = h->box[8] = 10.0f;
    for (int i = 0; i < natoms; i++)
        for (int k = 0; k < 3; k++)
            x[3 * i + k] = coord(step, i, k);
}

static int fail(const char *what, const char *path)
{
    perror(what);
    fprintf(stderr, "gmx_like: %s %s\n", what, path);
    return 1;
}

static int checkpoint(const char *dir, const float *x, int step, int natoms)
{
    char path[4096];
    struct { char magic[12]; int32_t step, natoms, pad[4]; } head = { "GMX_cpt_file", step, natoms, { 0 } };
    size_t n = 6 * (size_t)natoms;
    float *state = malloc(n * sizeof *state);
    FILE *f;
    int rc = 0;

    snprintf(path, sizeof path, "%s/state.cpt", dir);
    if (!state || (f = fopen(path, "w")) == NULL) {
        free(state);
        return fail("fopen", path);
    }
    memcpy(state, x, 3 * (size_t)natoms * sizeof *state);
    for (size_t i = 3 * (size_t)natoms; i < n; i++)
        state[i] = (float)step * 0.25f;
    if (fwrite(&head, sizeof head, 1, f) != 1 || fwrite(state, sizeof *state, n, f) != n)
        rc = fail("fwrite", path);
    if (fclose(f) != 0)
        rc = fail("fclose", path);
    free(state);
    return rc;
}

static int read_back(const char *path, int frames, int natoms)
{
    struct frame_header h, want;
    size_t n = 3 * (size_t)natoms;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    FILE *f = fopen(path, "r");
    int rc = 0;

    if (!x || !y || !f)
        rc = fail("fopen", path);
    for (int step = 0; rc == 0 && step < frames; step++) {
        fill_frame(&want, y, step, natoms);
        if (fread(&h, sizeof h, 1, f) != 1 || fread(x, sizeof *x, n, f) != n)
            rc = fail("fread", path);
        else if (memcmp(&h, &want, sizeof h) != 0 || memcmp(x, y, n * sizeof *x) != 0)
            rc = fail("verify", path);
    }
    if (f && fclose(f) != 0)
        rc = fail("fclose", path);
    free(x);
    free(y);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    int frames = argc > 2 ? atoi(argv[2]) : 500;
    int natoms = argc > 3 ? atoi(argv[3]) : 1000;
    int every = argc > 4 ? atoi(argv[4]) : 100;
    char traj_path[4096], ener_path[4096];
    struct frame_header h;
    size_t n = 3 * (size_t)natoms;
    float *x = malloc(n * sizeof *x);
    FILE *traj, *ener;

    if (frames < 1 || natoms < 1 || every < 1 || !x)
        return 2;
    snprintf(traj_path, sizeof traj_path, "%s/traj.trr", dir);
    snprintf(ener_path, sizeof ener_path, "%s/ener.log", dir);
    if ((traj = fopen(traj_path, "w")) == NULL)
        return fail("fopen", traj_path);
    if ((ener = fopen(ener_path, "w")) == NULL)
        return fail("fopen", ener_path);
    fprintf(ener, "%8s %14s %14s %14s\n", "step", "time", "potential", "kinetic");
    for (int step = 0; step < frames; step++) {
        fill_frame(&h, x, step, natoms);
        if (fwrite(&h, sizeof h, 1, traj) != 1 || fwrite(x, sizeof *x, n, traj) != n)
            return fail("fwrite", traj_path);
        fprintf(ener, "%8d %14.6f %14.6f %14.6f\n", step, h.time, -1000.0 + x[0], 500.0 + x[n - 1]);
        if ((step + 1) % every == 0) {
            if (fflush(traj) != 0 || fflush(ener) != 0)
                return fail("fflush", traj_path);
            if (checkpoint(dir, x, step, natoms) != 0)
                return 1;
        }
    }
    if (fclose(traj) != 0)
        return fail("fclose", traj_path);
    if (fclose(ener) != 0)
        return fail("fclose", ener_path);
    free(x);
    return read_back(traj_path, frames, natoms);
}
