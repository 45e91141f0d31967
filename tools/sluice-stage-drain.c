/*
 * The job's stage drainer (docs/stage.md, "The job drains"): `sluice run`
 * starts it with libsluice.so preloaded and the job's settings in the
 * environment; the drainer itself lives in the library
 * (src/stage/jobdrain.c), so that there is one publishing protocol.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int (*drain)(int, char **) = (int (*)(int, char **))dlsym(RTLD_DEFAULT, "sluice_stage_job_drain");

    if (!drain) {
        fprintf(stderr, "sluice-stage-drain: run it with libsluice.so preloaded (sluice run does)\n");
        return 2;
    }
    return drain(argc, argv);
}
