/* Append-only mmap arena; see arena.h. */
#include "common/arena.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#define ARENA_CHUNK (1u << 20)

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static char *arena_cur;   /* next free byte in the current chunk */
static size_t arena_left; /* bytes left in it */

void *sluice_arena_alloc(size_t size)
{
    void *p = NULL;

    size = (size + 15) & ~(size_t)15;
    pthread_mutex_lock(&arena_lock);
    if (size > arena_left) {
        size_t chunk = size > ARENA_CHUNK ? (size + 4095) & ~(size_t)4095 : ARENA_CHUNK;
        char *m = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            goto out;
        arena_cur = m;
        arena_left = chunk;
    }
    p = arena_cur;
    arena_cur += size;
    arena_left -= size;
out:
    pthread_mutex_unlock(&arena_lock);
    return p;
}

void sluice_arena_after_fork_child(void)
{
    pthread_mutex_init(&arena_lock, NULL);
}
