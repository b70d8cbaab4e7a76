import { describe, expect, it } from 'vitest'
import { ApiError } from './api'
import { FieldError } from './schemaForm'
import { controlsBody, NO_CONTROLS, retryable, SubmitKey, uuidOf } from './submitControls'

const fieldOf = (f: () => unknown): string => {
  try {
    f()
  } catch (e) {
    if (e instanceof FieldError) return e.field
    throw e
  }
  return ''
}

describe('controlsBody', () => {
  it('leaves empty controls out, so the API defaults apply', () => {
    expect(controlsBody(NO_CONTROLS)).toEqual({})
  })

  it('gives every control set', () => {
    expect(controlsBody({ queue: ' emails ', limitKey: 'tenant-42', uniqueKey: 'report:7', uniqueFor: '600' })).toEqual({
      queue: 'emails',
      limit_key: 'tenant-42',
      unique_key: 'report:7',
      unique_for: 600,
    })
  })

  it('checks the queue name as the API does', () => {
    for (const ok of ['a', '0', 'e2e.q_1-x', 'a'.repeat(64)]) expect(controlsBody({ ...NO_CONTROLS, queue: ok }).queue).toBe(ok)
    for (const bad of ['Emails', '-x', '.x', 'a b', 'a'.repeat(65), 'é']) expect(fieldOf(() => controlsBody({ ...NO_CONTROLS, queue: bad }))).toBe('queue')
  })

  it('bounds the keys in bytes and refuses control characters in limit_key', () => {
    expect(fieldOf(() => controlsBody({ ...NO_CONTROLS, limitKey: 'é'.repeat(101) }))).toBe('limit_key')
    expect(controlsBody({ ...NO_CONTROLS, limitKey: 'é'.repeat(100) }).limit_key).toBe('é'.repeat(100))
    expect(fieldOf(() => controlsBody({ ...NO_CONTROLS, limitKey: 'a\tb' }))).toBe('limit_key')
    expect(fieldOf(() => controlsBody({ ...NO_CONTROLS, uniqueKey: 'k'.repeat(201) }))).toBe('unique_key')
  })

  it('takes unique_for as whole seconds up to 30 days, and only with a unique_key', () => {
    expect(controlsBody({ ...NO_CONTROLS, uniqueKey: 'k', uniqueFor: '0' }).unique_for).toBe(0)
    expect(controlsBody({ ...NO_CONTROLS, uniqueKey: 'k', uniqueFor: '2592000' }).unique_for).toBe(2592000)
    for (const bad of ['-1', '1.5', '2592001', 'soon']) expect(fieldOf(() => controlsBody({ ...NO_CONTROLS, uniqueKey: 'k', uniqueFor: bad }))).toBe('unique_for')
    expect(fieldOf(() => controlsBody({ ...NO_CONTROLS, uniqueFor: '60' }))).toBe('unique_for')
  })
})

describe('uuidOf', () => {
  it('formats 16 bytes as a version 4 UUID', () => {
    expect(uuidOf(new Uint8Array(16).fill(0xff))).toBe('ffffffff-ffff-4fff-bfff-ffffffffffff')
    expect(uuidOf(new Uint8Array(16))).toBe('00000000-0000-4000-8000-000000000000')
  })
})

describe('retryable', () => {
  it('is a failure without the API answer, a 5xx, or the key in use', () => {
    expect(retryable(new TypeError('Failed to fetch'))).toBe(true)
    expect(retryable(new SyntaxError('Unexpected token <'))).toBe(true)
    expect(retryable(new ApiError(503, 'unavailable', 'down'))).toBe(true)
    expect(retryable(new ApiError(409, 'idempotency_key_in_use', 'busy'))).toBe(true)
    expect(retryable(new ApiError(422, 'validation_failed', 'bad', 'queue'))).toBe(false)
    expect(retryable(new ApiError(409, 'task_active', 'no'))).toBe(false)
  })
})

describe('SubmitKey', () => {
  const keys = () => {
    let n = 0
    return new SubmitKey(() => 'k' + ++n)
  }

  it('keeps the key while the same body is in flight (a double click)', () => {
    const k = keys()
    expect(k.start('{"a":1}')).toBe('k1')
    expect(k.start('{"a":1}')).toBe('k1')
  })

  it('keeps the key when the same body is retried after a network error or a 5xx', () => {
    const k = keys()
    k.start('b')
    k.settled(new TypeError('Failed to fetch'))
    expect(k.start('b')).toBe('k1')
    k.settled(new ApiError(502, 'http_502', 'Bad Gateway'))
    expect(k.start('b')).toBe('k1')
  })

  it('makes a new key after an answer, for another body, or once the form changed', () => {
    const k = keys()
    k.start('b')
    k.settled()
    expect(k.start('b')).toBe('k2')
    k.settled(new ApiError(422, 'validation_failed', 'bad'))
    expect(k.start('b')).toBe('k3')
    k.settled(new TypeError('Failed to fetch'))
    expect(k.start('c')).toBe('k4')
    k.settled(new TypeError('Failed to fetch'))
    k.reset()
    expect(k.start('c')).toBe('k5')
  })
})
