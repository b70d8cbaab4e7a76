import type { components } from './api/schema'

// The dashboard's only data source is the public HTTP API. The token (admin
// key or session token) lives in sessionStorage, never in a URL, except for
// EventSource which cannot set headers (the API takes ?access_token= there).
const KEY = 'taskflow.token'

export function getToken(): string | null {
  return sessionStorage.getItem(KEY)
}

export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(KEY, t)
  else sessionStorage.removeItem(KEY)
}

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public field = '',
  ) {
    super(message)
  }
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  return (await apiResponse<T>(path, init)).body
}

// apiResponse is api with the answer's status and headers (a submit reads
// Idempotent-Replayed).
export async function apiResponse<T>(path: string, init: RequestInit = {}): Promise<{ body: T; status: number; headers: Headers }> {
  const headers = new Headers(init.headers)
  headers.set('Accept', 'application/json')
  const tok = getToken()
  if (tok) headers.set('Authorization', `Bearer ${tok}`)
  const res = await fetch(path, { ...init, headers })
  const text = await res.text()
  const body = text ? JSON.parse(text) : undefined
  if (!res.ok) {
    const e = body?.error ?? {}
    throw new ApiError(res.status, e.code ?? 'http_' + res.status, e.message ?? res.statusText, e.field ?? '')
  }
  return { body: body as T, status: res.status, headers: res.headers }
}

// Types generated from /openapi.json (make ui-types); ui-check fails when they drift.
export type QueueStatus = components['schemas']['QueueStatus']
// Notification is what every feed sends: an item of the poll's page, a
// message of the WebSocket, the data of an SSE event.
export type Notification = components['schemas']['Notification']
export type NotificationPage = components['schemas']['NotificationPage']
