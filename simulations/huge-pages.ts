/**
 * Transparent huge pages for a simulation's process, through glibc's malloc. A large run is bound
 * by memory access: each message or connection touches a random core's columns, most of the
 * state is typed arrays' backing stores, and Node takes those from malloc (calloc). With 4 KiB
 * pages nearly every such touch misses the TLB as well as the caches (at 10,000 processes the
 * state is ~8 GB: 2 M pages, their page tables alone 16 MB). `glibc.malloc.hugetlb=1` (glibc 2.35
 * and later) makes malloc ask for transparent huge pages (madvise MADV_HUGEPAGE) on what it maps,
 * which a kernel with transparent_hugepage set to `madvise` (or `always`) then backs with 2 MiB
 * pages. Elsewhere (another libc, THP `never`) the variable is ignored and nothing changes.
 * V8's own heap pages are not malloc's and keep 4 KiB pages.
 */

/** The glibc tunable that asks malloc for transparent huge pages. */
export const HUGE_PAGES_TUNABLE = 'glibc.malloc.hugetlb=1'

/**
 * `env` with HUGE_PAGES_TUNABLE added to its GLIBC_TUNABLES (a colon-separated list), unless it
 * already sets glibc.malloc.hugetlb: the caller's own value wins (`GLIBC_TUNABLES=glibc.malloc.hugetlb=0`
 * runs without huge pages, to compare). `env` itself is not changed.
 */
export function withHugePages(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const current = env.GLIBC_TUNABLES ?? ''
  if (current.split(':').some((tunable) => tunable.startsWith('glibc.malloc.hugetlb='))) return { ...env }
  return { ...env, GLIBC_TUNABLES: current === '' ? HUGE_PAGES_TUNABLE : `${current}:${HUGE_PAGES_TUNABLE}` }
}
