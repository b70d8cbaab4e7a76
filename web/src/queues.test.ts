import { describe, expect, it } from 'vitest'
import { limitText } from './Queues'

describe('limitText', () => {
  it('reads a rate and a concurrency out', () => {
    expect(limitText({ scope: 'key', name: '*', rate: { limit: 10, per: 1 }, concurrency: 2 })).toBe('10 per 1 s, 2 at once')
    expect(limitText({ scope: 'queue', name: 'bulk', rate: null, concurrency: 0 })).toBe('0 at once')
    expect(limitText({ scope: 'task_type', name: 'x', rate: { limit: 60, per: 60 }, concurrency: null })).toBe('60 per 60 s')
  })
})
