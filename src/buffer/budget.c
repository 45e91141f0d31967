/* Buffer memory accounting; see budget.h. */
#include "buffer/budget.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "buffer/flusher.h"

static int64_t cap_bytes;
static _Atomic int64_t used_bytes;
static _Atomic int64_t high_water;
static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t freed = PTHREAD_COND_INITIALIZER;

void budget_init(int64_t cap)
{
    cap_bytes = cap;
}

int budget_reserve(int64_t delta)
{
    int64_t now = atomic_load(&used_bytes);

    do {
        if (delta > 0 && now + delta > cap_bytes)
            return -ENOMEM;
    } while (!atomic_compare_exchange_weak(&used_bytes, &now, now + delta));
    now += delta;
    int64_t hw = atomic_load(&high_water);
    while (now > hw && !atomic_compare_exchange_weak(&high_water, &hw, now))
        ;
    return 0;
}

void budget_wait(int64_t want)
{
    pthread_mutex_lock(&wait_lock);
    while (atomic_load(&used_bytes) + want > cap_bytes && flusher_jobs_pending() > 0) {
        /* Timed: a wake-up between the test and the wait must not hang us. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&freed, &wait_lock, &ts);
    }
    pthread_mutex_unlock(&wait_lock);
}

void budget_wake(void)
{
    pthread_mutex_lock(&wait_lock);
    pthread_cond_broadcast(&freed);
    pthread_mutex_unlock(&wait_lock);
}

int64_t budget_used(void)
{
    return atomic_load(&used_bytes);
}

int64_t budget_high_water(void)
{
    return atomic_load(&high_water);
}

int64_t budget_cap(void)
{
    return cap_bytes;
}

void budget_after_fork_child(void)
{
    pthread_mutex_init(&wait_lock, NULL);
    pthread_cond_init(&freed, NULL);
}
