import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Inbox, type InboxItem } from '../src/inbox.ts'
import type { UpdateMessage } from '../src/types.ts'

const message = (n: number): UpdateMessage => ({ neighbourSlots: [], transSets: [], entries: [], hello: { receiverSeq: n } }) as unknown as UpdateMessage

describe('Inbox: received updates in columns', () => {
  it('gives back each pushed update, oldest first, with its sender, number and connection, through bursts that empty it and bursts that do not', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('push' as const), count: fc.integer({ min: 1, max: 1_300 }) }),
      fc.record({ k: fc.constant('take' as const), count: fc.integer({ min: 1, max: 1_400 }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 20 }), (ops) => {
        const inbox = new Inbox()
        const model: InboxItem[] = []
        let pushed = 0
        for (const o of ops) {
          if (o.k === 'push') {
            for (let i = 0; i < o.count; i++, pushed++) {
              const item = { from: `n${pushed % 97}`, index: pushed % 97, connection: pushed, message: message(pushed) }
              inbox.push(item.from, item.index, item.connection, item.message)
              model.push(item)
            }
          } else {
            for (let i = 0; i < o.count; i++) expect(inbox.take()).toEqual(model.shift())
          }
          expect(inbox.length).toBe(model.length)
        }
      }),
    )
  })
})
