import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { UpdateMessage } from '../src/index.ts'
import { LinkQueues } from '../src/testing/links.ts'

// TestNet picks which link delivers next from its busy links, in the order the links were made
// (what a Map filtered after every event gave): the replay and identity checks of every test that
// uses TestNet depend on that order staying as it was.
describe('TestNet link queues', () => {
  it('list the busy links in the order a Map of every link, filtered, gives', () => {
    const keys = ['a>b', 'b>a', 'a>c', 'c>a', 'b>c']
    const op = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), key: fc.constantFrom(...keys) }),
      fc.record({ kind: fc.constant('take' as const), key: fc.constantFrom(...keys), at: fc.nat() }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...keys) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const links = new LinkQueues()
        const reference = new Map<string, UpdateMessage[]>()
        let made = 0
        for (const step of ops) {
          if (step.kind === 'push') {
            const message = { entries: [], serial: made++ } as unknown as UpdateMessage
            links.push(step.key, message)
            if (!reference.has(step.key)) reference.set(step.key, [])
            reference.get(step.key)!.push(message)
          } else if (step.kind === 'delete') {
            links.delete(step.key)
            reference.delete(step.key)
          } else {
            const queue = links.busy().find(([key]) => key === step.key)?.[1]
            const expected = reference.get(step.key)
            if (queue === undefined || expected === undefined || expected.length === 0) continue
            queue.splice(step.at % queue.length, 1)
            expected.splice(step.at % expected.length, 1)
            links.changed(step.key)
          }
          const busy = links.busy().map(([key, queue]) => [key, [...queue]])
          expect(busy).toEqual([...reference].filter(([, queue]) => queue.length > 0))
        }
      }),
    )
  })
})
