// Shared by the dashboard's performance scripts (web/test/perf/*.mjs): the
// server they measure, Chromium, and the statistics they print. Plain Node
// ESM with playwright-core; nothing here is part of `make test`.
import { chromium } from 'playwright-core'

// base is the API/dashboard URL of the env variable named, without a
// trailing slash; the token (admin key or session token) is TASKFLOW_TOKEN.
export function server(envName) {
  const raw = process.env[envName] || process.env.TASKFLOW_URL
  if (!raw) {
    console.error(`set ${envName} (or TASKFLOW_URL) to the taskflow API to measure, e.g. http://127.0.0.1:8080`)
    process.exit(2)
  }
  return { base: raw.replace(/\/+$/, ''), token: process.env.TASKFLOW_TOKEN || '' }
}

export function authHeaders(token) {
  return token ? { Authorization: `Bearer ${token}` } : {}
}

// num reads a numeric env variable, with a default.
export function num(name, dflt) {
  const v = process.env[name]
  if (v === undefined || v === '') return dflt
  const n = Number(v)
  if (!Number.isFinite(n)) {
    console.error(`${name}=${v} is not a number`)
    process.exit(2)
  }
  return n
}

// Chromium as the e2e tests start it: Debian's binary, headless, no
// sandbox (containers), a fresh temporary profile.
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}

// A page whose sessionStorage holds the token before the app reads it.
export async function newPage(browser, token) {
  const context = await browser.newContext()
  if (token) {
    await context.addInitScript((t) => sessionStorage.setItem('taskflow.token', t), token)
  }
  const page = await context.newPage()
  return { context, page }
}

// pct is the p-th percentile (0..1) of sorted xs, nearest rank.
export function pct(xs, p) {
  if (xs.length === 0) return NaN
  const i = Math.min(xs.length - 1, Math.max(0, Math.ceil(p * xs.length) - 1))
  return xs[i]
}

export function stats(values) {
  const xs = [...values].sort((a, b) => a - b)
  const sum = xs.reduce((a, b) => a + b, 0)
  return { n: xs.length, p50: pct(xs, 0.5), p90: pct(xs, 0.9), p99: pct(xs, 0.99), max: xs[xs.length - 1] ?? NaN, mean: xs.length ? sum / xs.length : NaN }
}

export const r2 = (x) => (Number.isFinite(x) ? Math.round(x * 100) / 100 : x)
export const r1 = (x) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : x)

// CDP Performance.getMetrics as an object (JSHeapUsedSize, TaskDuration...).
export async function metrics(cdp) {
  const { metrics: ms } = await cdp.send('Performance.getMetrics')
  return Object.fromEntries(ms.map((m) => [m.name, m.value]))
}

export const mib = (b) => r2(b / 1048576)
