import { describe, expect, it } from 'vitest'
import { HUGE_PAGES_TUNABLE, withHugePages } from './huge-pages.ts'

describe('withHugePages (a scale run child environment)', () => {
  it('asks glibc for transparent huge pages when nothing is set', () => {
    expect(withHugePages({ PATH: '/bin' })).toEqual({ PATH: '/bin', GLIBC_TUNABLES: HUGE_PAGES_TUNABLE })
  })

  it('adds to the tunables already set, keeping them', () => {
    expect(withHugePages({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }).GLIBC_TUNABLES).toBe(`glibc.malloc.arena_max=2:${HUGE_PAGES_TUNABLE}`)
  })

  it("keeps the caller's own glibc.malloc.hugetlb (0: a run without huge pages, to compare)", () => {
    expect(withHugePages({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }).GLIBC_TUNABLES).toBe('glibc.malloc.hugetlb=0')
    expect(withHugePages({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0' }).GLIBC_TUNABLES).toBe('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0')
  })

  it('does not change the environment it is given', () => {
    const env = { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }
    withHugePages(env)
    expect(env).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' })
  })
})
