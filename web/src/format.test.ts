import { describe, expect, it } from 'vitest'
import { count, exact, firstLine, ms, relative, shortId, span } from './format'

describe('format', () => {
  const now = Date.UTC(2026, 10, 26, 10, 0, 0)
  it('says how long ago or ahead, in the largest unit that fits', () => {
    expect(relative(now - 500, now)).toBe('just now')
    expect(relative(now - 42_000, now)).toBe('42 s ago')
    expect(relative(now - 3 * 60_000 - 5_000, now)).toBe('3 min ago')
    expect(relative(now + 2.5 * 3600_000, now)).toBe('in 2.5 h')
    expect(relative(now - 5 * 86400_000, now)).toBe('5 d ago')
    expect(relative(now - 30 * 86400_000, now)).toBe('30 d ago')
  })
  it('writes the exact time with its zone and UTC', () => {
    expect(exact(now)).toMatch(/^2026-11-26 \d\d:00:00\.000 UTC/)
    expect(exact(now)).toContain(new Date(now).getTimezoneOffset() === 0 ? 'UTC' : '2026-11-26T10:00:00.000Z')
  })
  it('writes durations', () => {
    expect(span(850)).toBe('850 ms')
    expect(span(4200)).toBe('4.2 s')
    expect(span(192_000)).toBe('3 min 12 s')
    expect(span(2 * 3600_000 + 5 * 60_000)).toBe('2 h 5 min')
    expect(span(-1)).toBe('–')
  })
  it('shortens a UUIDv7 to its random tail, which tasks created together do not share', () => {
    expect(shortId('01a216f8-dbf9-7043-be9f-5cf24b1c7cb9')).toBe('4b1c7cb9')
    expect(shortId('01a216f8-dbf3-7e14-b4b4-d6b4c345da7e')).toBe('c345da7e')
    expect(shortId('weekday-report')).toBe('weekday-re…')
    expect(shortId('short')).toBe('short')
  })
  it('writes counts and latencies', () => {
    expect(count(1956)).toBe('1,956')
    expect(count(null)).toBe('–')
    expect(ms(35.44)).toBe('35.4 ms')
    expect(ms(1956.51)).toBe('1,957 ms')
    expect(ms(undefined)).toBe('–')
  })
  it('keeps an error to its first line, saying when more was left out', () => {
    expect(firstLine('boom')).toEqual({ head: 'boom', long: false })
    expect(firstLine('panic: x\ngoroutine 1\nmain.go:3')).toEqual({ head: 'panic: x', long: true })
    const long = firstLine('a'.repeat(200), 50)
    expect(long.head).toHaveLength(50)
    expect(long.long).toBe(true)
  })
})
