// SPDX-License-Identifier: MIT
/* Version ordering for pmetrics analyze: semantic versions with
 * pre-release tags ("8.2.0-alpha.1"), newest first. */
#ifndef PMETRICS_ANALYZE_SEMVER_H
#define PMETRICS_ANALYZE_SEMVER_H

/* qsort-style comparison that sorts newest first: semantic versions by
 * SemVer 2.0 precedence (a leading "v" and missing minor/patch parts are
 * accepted, build metadata after "+" is ignored), ties and everything
 * that is not a version after them, in byte order. */
int version_cmp_newest_first(const char *a, const char *b);

/* 1 when S parses as a (relaxed) semantic version. */
int version_is_semver(const char *s);

#endif
