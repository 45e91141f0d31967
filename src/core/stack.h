/*
 * Building the tier stack of an open file from SLUICE_TIERS (validated once
 * at load, as fio validates its engines: ABI, size, mandatory slots, the
 * bottom tier last, test-only tiers refused unless allowed).
 */
#ifndef SLUICE_CORE_STACK_H
#define SLUICE_CORE_STACK_H

#include "core/file.h"
#include "core/policy.h"

/* The tiers of one mode, top first, the bottom tier last. */
struct sluice_stack {
    const struct sluice_tier_ops *tier[SLUICE_MAX_TIERS];
    int depth;
};

/* The stack of `mode`, for path calls. */
const struct sluice_stack *sluice_stack_of(enum sluice_mode mode);

/* 1 when a tier above the bottom one answers path calls in some mode: a
 * path must then be resolved (its mode known) before its call goes down. */
int sluice_stack_has_path_tiers(void);

/* Parse and validate the configured stack. A rejected tier is reported once
 * on stderr and left out. Returns the number of tiers in the stack. */
int sluice_stack_init(const char *tiers, int allow_test_tiers);

/* Fill f->tier[], f->depth, f->tier_state[], f->sides and f->owns_pos
 * with the stack of `mode`. 0 or -ENOMEM. */
int sluice_stack_build(struct sluice_file *f, enum sluice_mode mode);

/* The caps of every tier of `mode`'s stack together (sluice_tier_caps);
 * whether some mode's stack has any of `caps`. */
int sluice_stack_caps(enum sluice_mode mode);
int sluice_stack_any_caps(unsigned caps);

/* 1 when files of `mode` have the bottom tier alone (nothing to set up
 * before the kernel's open). */
int sluice_stack_is_bottom_only(enum sluice_mode mode);

/* A stream buffer for a stream of `mode` from its stack's tiers (NULL:
 * the C library's own), and its release after the stream let go of it. */
void *sluice_stack_stream_buffer(enum sluice_mode mode, size_t *size);
void sluice_stack_stream_buffer_free(void *buf, size_t size);

/* Every tier's quiesce (before fork, exec, exit; see sluice_tier.h). */
int sluice_stack_quiesce(unsigned why);

/* Every tier's after_fork_child. */
void sluice_stack_after_fork_child(void);

/* The tier table named `name`, or NULL. */
const struct sluice_tier_ops *sluice_tier_find(const char *name);

#endif
