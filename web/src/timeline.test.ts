import { describe, expect, it } from 'vitest'
import { duration, spans } from './timeline'

describe('spans', () => {
  it('times each state until the next change, the last until now', () => {
    const s = spans(
      [
        { at: '2026-11-26T10:00:01.500Z', from: 'PENDING', to: 'ACTIVE' },
        { at: '2026-11-26T10:00:00.000Z', to: 'PENDING', cause: 'submitted' },
        { at: '2026-11-26T10:00:04.000Z', from: 'ACTIVE', to: 'COMPLETED' },
      ],
      Date.parse('2026-11-26T10:01:00Z'),
    )
    expect(s.map((x) => x.state)).toEqual(['PENDING', 'ACTIVE', 'COMPLETED'])
    expect(s.map((x) => x.ms)).toEqual([1500, 2500, 56000])
    expect(s[0].cause).toBe('submitted')
    expect(s[2].current).toBe(true)
    expect(s[1].current).toBe(false)
  })
  it('skips entries without a time or a state', () => {
    expect(spans([{ to: 'PENDING' }, { at: '2026-11-26T10:00:00Z' }], 0)).toEqual([])
  })
})

describe('duration', () => {
  it('reads like a person writes it', () => {
    expect(duration(850)).toBe('850 ms')
    expect(duration(4200)).toBe('4.2 s')
    expect(duration(185000)).toBe('3 min 5 s')
    expect(duration(2 * 3600000 + 600000)).toBe('2 h 10 min')
    expect(duration(50 * 3600000)).toBe('2 d 2 h')
  })
})
