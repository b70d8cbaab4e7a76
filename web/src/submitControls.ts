import { ApiError } from './api'
import { FieldError } from './schemaForm'

// The submit form's delivery controls (issue 26): the named queue, the
// key per-key limits count against, and a unique key held for a while.
// Checked here as the API checks them, so a slip is shown next to its
// field before the request; the API's 422 stays the rule for the rest.
export const QUEUE_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/
export const MAX_KEY_BYTES = 200
export const MAX_UNIQUE_FOR = 2_592_000 // 30 days

export interface Controls {
  queue: string
  limitKey: string
  uniqueKey: string
  uniqueFor: string
}

export const NO_CONTROLS: Controls = { queue: '', limitKey: '', uniqueKey: '', uniqueFor: '' }

const CONTROL_CHARS = /[\u0000-\u001f\u007f]/

function bytes(s: string): number {
  return new TextEncoder().encode(s).length
}

// controlsBody is the part of the submit body the controls give (empty
// fields left out, so the API's defaults apply); a value the API would
// refuse throws a FieldError naming the body's field.
export function controlsBody(c: Controls): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const queue = c.queue.trim()
  if (queue) {
    if (!QUEUE_RE.test(queue)) {
      throw new FieldError('queue', 'queue: lower-case letters, digits, ".", "_" or "-", starting with a letter or digit, at most 64 characters')
    }
    out.queue = queue
  }
  if (c.limitKey) {
    if (bytes(c.limitKey) > MAX_KEY_BYTES) throw new FieldError('limit_key', `limit_key: at most ${MAX_KEY_BYTES} bytes`)
    if (CONTROL_CHARS.test(c.limitKey)) throw new FieldError('limit_key', 'limit_key: no control characters')
    out.limit_key = c.limitKey
  }
  if (c.uniqueKey) {
    if (bytes(c.uniqueKey) > MAX_KEY_BYTES) throw new FieldError('unique_key', `unique_key: at most ${MAX_KEY_BYTES} bytes`)
    out.unique_key = c.uniqueKey
  }
  const forText = c.uniqueFor.trim()
  if (forText) {
    const n = Number(forText)
    if (!Number.isInteger(n) || n < 0 || n > MAX_UNIQUE_FOR) {
      throw new FieldError('unique_for', `unique_for: whole seconds from 0 to ${MAX_UNIQUE_FOR} (30 days)`)
    }
    if (!c.uniqueKey) throw new FieldError('unique_for', 'unique_for needs a unique_key')
    out.unique_for = n
  }
  return out
}

// uuid4 is a random UUID: crypto.randomUUID where the page is a secure
// context, else made of crypto.getRandomValues (served over plain http on
// a LAN address, randomUUID is missing).
export function uuid4(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  return uuidOf(crypto.getRandomValues(new Uint8Array(16)))
}

// uuidOf formats 16 random bytes as a version 4 UUID.
export function uuidOf(random: Uint8Array): string {
  const b = Uint8Array.from(random)
  b[6] = (b[6] & 0x0f) | 0x40
  b[8] = (b[8] & 0x3f) | 0x80
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

// retryable: a failure after which the same request may be sent again
// under the same Idempotency-Key — no answer (a network error, or a body
// that is not the API's JSON, as from a proxy), a 5xx, or the key still
// being processed. Any other answer was the API's last word on it.
export function retryable(err: unknown): boolean {
  if (!(err instanceof ApiError)) return true
  return err.status >= 500 || err.code === 'idempotency_key_in_use'
}

// SubmitKey hands out the Idempotency-Key of each submit: the same key
// while the same body is in flight or is resent after a retryable
// failure (so a double click or a retry creates one task), a new one for
// a new body, after an answer, or once the form changed (reset).
export class SubmitKey {
  private key = ''
  private body = ''
  private reusable = false

  constructor(private make: () => string = () => uuid4()) {}

  start(body: string): string {
    if (!this.reusable || body !== this.body || !this.key) {
      this.key = this.make()
      this.body = body
    }
    this.reusable = true
    return this.key
  }

  // settled: the submit was answered (ok) or failed with err.
  settled(err?: unknown): void {
    this.reusable = err !== undefined && retryable(err)
  }

  reset(): void {
    this.reusable = false
  }
}
