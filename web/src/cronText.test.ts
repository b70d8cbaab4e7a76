import { describe, expect, it } from 'vitest'
import { describeCron } from './cronText'

describe('describeCron', () => {
  it.each([
    ['@hourly', 'every hour, on the hour'],
    ['@daily', 'every day at 00:00 UTC'],
    ['@every 30s', 'every 30s'],
    ['* * * * *', 'every minute'],
    ['*/5 * * * *', 'every 5 minutes'],
    ['15 * * * *', 'every hour at minute 15'],
    ['0 */6 * * *', 'every 6 hours at minute 0'],
    ['30 9 * * *', 'at 09:30 UTC'],
    ['0 9 * * 1-5', 'at 09:00 UTC, on Monday–Friday'],
    ['0 9 * * 0,6', 'at 09:00 UTC, on Sunday and Saturday'],
    ['0 0 1 * *', 'at 00:00 UTC, on day 1 of the month'],
    ['0 0 1 1 *', 'at 00:00 UTC, on day 1 of the month, in January'],
    ['0 8,12,18 * * *', 'at minute 0 of hours 8, 12 and 18 UTC'],
    ['0 0 * * 7', 'at 00:00 UTC, on Sunday'],
  ])('%s', (expr, text) => {
    expect(describeCron(expr)).toBe(text)
  })
  it('says nothing of what it cannot read', () => {
    for (const e of ['', 'soon', '* * *', '*/5 */2 * * *', '0 9 * * MON', '1-5/2 * * * *']) {
      expect(describeCron(e)).toBe('')
    }
  })
})
