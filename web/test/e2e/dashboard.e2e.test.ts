// End to end: a real `taskflow dev` (embedded Redis, open mode) on a free
// port, driven through Debian's Chromium. Any console error or failed
// request in the page fails the test.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

const root = resolve(__dirname, '../../..')
let proc: ChildProcess
let llm: ChildProcess
let base = ''
let browser: Browser
let page: Page
let problems: string[] = []
const tmp = mkdtempSync(join(tmpdir(), 'taskflow-e2e-'))

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      s.close(() => (a && typeof a === 'object' ? ok(a.port) : fail(new Error('no port'))))
    })
  })
}

beforeAll(async () => {
  execFileSync('go', ['build', '-o', join(tmp, 'taskflow'), './cmd/taskflow'], { cwd: root, stdio: 'inherit' })
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  // summarize through the fake chat-completions server, so the workers
  // declare the openrouter dependency and its circuit breaker
  const llmPort = await freePort()
  llm = spawn(join(tmp, 'taskflow'), ['fake-llm', '--addr', `127.0.0.1:${llmPort}`], { stdio: 'ignore' })
  const env: NodeJS.ProcessEnv = { ...process.env, OPENROUTER_API_KEY: 'e2e-key', OPENROUTER_BASE_URL: `http://127.0.0.1:${llmPort}/api/v1` }
  delete env.REDIS_URL
  delete env.TASKFLOW_ADMIN_KEY
  proc = spawn(join(tmp, 'taskflow'), ['dev', '--addr', `127.0.0.1:${port}`, '--demo-data'], { env, stdio: 'ignore' })
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(base + '/ready')).ok) break
    } catch {
      /* not yet listening */
    }
    if (i > 200) throw new Error('taskflow dev did not become ready')
    await new Promise((r) => setTimeout(r, 100))
  }
  // launch() gives the browser a fresh temporary profile of its own.
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  for (const p of [proc, llm]) {
    if (p && p.exitCode === null) {
      const done = new Promise((r) => p.once('exit', r))
      p.kill('SIGTERM')
      await done
    }
  }
  rmSync(tmp, { recursive: true, force: true })
})

beforeEach(async () => {
  problems = []
  page = await browser.newPage()
  page.on('console', (m) => m.type() === 'error' && problems.push('console: ' + m.text()))
  page.on('pageerror', (e) => problems.push('page error: ' + e.message))
  page.on('requestfailed', (r) => {
    // EventSource streams are cut when the page closes; that is not a failure.
    if (!r.url().includes('/stream')) problems.push('request failed: ' + r.url())
  })
  page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`))
})

afterEach(async () => {
  await page.close()
  expect(problems).toEqual([])
})

// shoot writes the page in the light and the dark theme to docs/img/ when
// UI_SCREENSHOTS is set (make ui-screenshots): a plain test run leaves the
// committed pictures alone, since every run's task ids differ. It still
// renders both themes, so a theme that breaks the page fails the run.
async function shoot(name: string, fullPage = false) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    const path = process.env.UI_SCREENSHOTS ? join(root, 'docs/img', `dashboard-${name}-${scheme}.png`) : undefined
    await page.screenshot({ path, fullPage })
  }
}

describe('dashboard', () => {
  it('opens from / on the live overview without sign-in in open mode', async () => {
    await page.goto(base + '/')
    expect(new URL(page.url()).pathname).toBe('/ui/')
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await page.getByText('Stream: live').waitFor()
    await page.getByRole('table', { name: 'Queues' }).waitFor()
    // the history the API keeps: a task done just now shows in it
    // (a few bursts over two steps of the series, so the charts have lines)
    for (let burst = 0; burst < 4; burst++) {
      const rs = await Promise.all(
        Array.from({ length: 10 }, () =>
          fetch(base + '/api/v1/tasks', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"task_type":"noop"}' }),
        ),
      )
      expect(rs.map((r) => r.status)).toEqual(Array(10).fill(201))
      await new Promise((r) => setTimeout(r, 1500))
    }
    await page.getByRole('img', { name: /^Throughput chart/ }).waitFor()
    await page.getByRole('img', { name: /^Start latency chart/ }).waitFor()
    await page.getByRole('table', { name: 'Over the window' }).getByRole('cell').nth(1).filter({ hasText: /^40$/ }).waitFor({ timeout: 15_000 })
    await shoot('overview', true)
  })

  it('submits a summarize, follows it to COMPLETED, and the deep URL survives a reload', async () => {
    await page.goto(base + '/ui/submit')
    await page.getByLabel('Text to summarize').fill('Taskflow runs tasks on Redis. Workers take them. The dashboard shows them live.')
    await page.getByRole('button', { name: 'Submit' }).click()
    await page.waitForURL(/\/ui\/tasks\/[^/]+$/)
    await page.getByTestId('task-state').filter({ hasText: 'COMPLETED' }).waitFor({ timeout: 30_000 })
    const deep = page.url()
    await page.reload()
    expect(page.url()).toBe(deep)
    await page.getByTestId('task-state').filter({ hasText: 'COMPLETED' }).waitFor()
    await page.getByRole('link', { name: 'Tasks' }).click()
    await page.getByRole('table').waitFor()
    await page.getByLabel('State').selectOption('COMPLETED')
    await page.waitForURL(/state=COMPLETED/)
    await page.getByRole('link', { name: deep.split('/').pop()! }).waitFor()
    await shoot('tasks')
  })

  it('filters the dead letters and retries or deletes many at once, each confirmed with its count', async () => {
    // three sleeps that fail permanently, and one noop that does not
    for (let i = 0; i < 3; i++) {
      const r = await fetch(base + '/api/v1/tasks', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ task_type: 'sleep', params: { duration_ms: 0, fail: 'permanent' } }),
      })
      expect(r.status).toBe(201)
    }
    for (let i = 0; ; i++) {
      const d = (await (await fetch(base + '/api/v1/queues/dlq?task_type=sleep')).json()) as { total: number }
      if (d.total === 3) break
      if (i > 100) throw new Error('the sleeps never reached the DLQ')
      await new Promise((r) => setTimeout(r, 100))
    }
    const asked: string[] = []
    page.on('dialog', (d) => {
      asked.push(d.message())
      void d.accept()
    })
    await page.goto(base + '/ui/dlq')
    await page.getByLabel('Task type').fill('sleep')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.waitForURL(/task_type=sleep/)
    await page.getByRole('table').getByText('3 dead letters').waitFor()
    const boxes = page.getByRole('checkbox', { name: /^Select [0-9a-f-]+$/ })
    await boxes.nth(0).check()
    await boxes.nth(1).check()
    await shoot('dlq')
    await page.getByRole('button', { name: 'Delete selected (2)' }).click()
    await page.getByRole('status').filter({ hasText: 'Deleted 2 of 2.' }).waitFor()
    expect(asked).toEqual(['Delete 2 selected dead letters?'])
    await page.getByRole('table').getByText('1 dead letters').waitFor()
    await page.getByRole('button', { name: 'Retry all matching (1)' }).click()
    await page.getByRole('status').filter({ hasText: 'Retried 1 of 1.' }).waitFor()
    expect(asked[1]).toBe('Retry all 1 dead letters matching this filter?')
  })

  it('shows the workers, opens a circuit breaker from the page and resets it', async () => {
    await page.goto(base + '/ui/workers')
    await page.getByRole('table', { name: /live workers/ }).waitFor()
    await page.getByTestId('breaker-openrouter').filter({ hasText: 'CLOSED' }).waitFor()
    await page.getByRole('button', { name: 'Open openrouter' }).click()
    await page.getByTestId('breaker-openrouter').filter({ hasText: 'OPEN' }).waitFor()
    await shoot('workers')
    await page.getByRole('button', { name: 'Reset openrouter' }).click()
    await page.getByTestId('breaker-openrouter').filter({ hasText: 'CLOSED' }).waitFor()
    await page.getByRole('table', { name: 'External services' }).waitFor()
    await page.getByRole('table', { name: 'Consumer groups of task.create' }).waitFor()
  })

  it('reads a cron expression out before saving, creates a schedule and deletes it', async () => {
    page.on('dialog', (d) => void d.accept())
    await page.goto(base + '/ui/schedules')
    await page.getByLabel('Cron expression (UTC)').fill('0 9 * * 1-5')
    await page.getByTestId('cron-reading').filter({ hasText: 'Runs at 09:00 UTC, on Monday–Friday.' }).waitFor()
    await page.getByLabel('Id (optional)').fill('weekday-report')
    await page.getByRole('button', { name: 'Create schedule' }).click()
    await page.getByRole('status').filter({ hasText: 'Schedule weekday-report created' }).waitFor()
    await page.getByRole('cell', { name: 'weekday-report', exact: true }).waitFor()
    await page.getByRole('cell', { name: 'not yet' }).waitFor() // its last run
    await shoot('schedules')
    await page.getByRole('button', { name: 'Delete weekday-report' }).click()
    await page.getByRole('status').filter({ hasText: 'Schedule weekday-report deleted.' }).waitFor()
    await page.getByRole('cell', { name: 'weekday-report', exact: true }).waitFor({ state: 'detached' })
  })

  it('signed in with a session token, shows only its own tasks and its notifications arriving live', async () => {
    const sess = (await (await fetch(base + '/api/v1/sessions', { method: 'POST' })).json()) as { token: string; session_id: string }
    const submit = async (token?: string) => {
      const r = await fetch(base + '/api/v1/tasks', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ task_type: 'noop' }),
      })
      return ((await r.json()) as { task_id: string }).task_id
    }
    const mine = await submit(sess.token)
    await submit() // the admin's (open mode), not the session's
    await page.addInitScript((t) => sessionStorage.setItem('taskflow.token', t), sess.token)
    await page.goto(base + '/ui/sessions')
    await page.getByText(`Session ${sess.session_id}`).waitFor()
    await page.getByRole('cell', { name: 'Your noop task is ready!' }).waitFor()
    await page.getByRole('table', { name: '1 tasks of this session' }).waitFor()
    await page.getByRole('link', { name: mine }).first().waitFor()
    // a second task of the session: its notification arrives without a reload
    const next = await submit(sess.token)
    await page.getByRole('link', { name: next }).first().waitFor()
    await shoot('session')
    await page.getByRole('link', { name: 'Tasks' }).click()
    await page.getByRole('table', { name: /^2 tasks/ }).waitFor()
    // the probe's 403 on the operators' queue status tells the UI it is a session
    problems = problems.filter((p) => !(p.includes('403') && (p.includes('/queues/status') || p.startsWith('console'))))
  })

  it('cancels a running sleep task, the page following it live from ACTIVE to CANCELLED', async () => {
    const r = await fetch(base + '/api/v1/tasks', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ task_type: 'sleep', params: { duration_ms: 60_000 } }),
    })
    const { task_id } = (await r.json()) as { task_id: string }
    await page.goto(base + '/ui/tasks/' + task_id)
    await page.getByTestId('task-state').filter({ hasText: 'ACTIVE' }).waitFor({ timeout: 15_000 })
    await page.getByRole('table', { name: 'Each change' }).getByRole('cell', { name: 'PENDING → ACTIVE' }).waitFor()
    await shoot('task', true)
    await page.getByRole('button', { name: 'Cancel' }).click()
    await page.getByTestId('task-state').filter({ hasText: 'CANCELLED' }).waitFor({ timeout: 15_000 })
    await page.getByRole('cell', { name: 'ACTIVE → CANCELLED' }).waitFor()
    expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0) // nothing left to cancel
  })

  it('runs complex_dag: its DAG drawn, then its output and per-node timeline', async () => {
    await page.goto(base + '/ui/plans')
    await page.getByRole('link', { name: 'complex_dag' }).click()
    await page.waitForURL(/\/ui\/plans\/complex_dag$/)
    await page.getByRole('img', { name: 'Graph of plan complex_dag' }).waitFor()
    await page.getByText('DAG: 10 nodes (5 IO, 5 CPU), output n9').waitFor()
    await page.getByLabel('Deadline (ms)').fill('2000')
    await page.getByRole('button', { name: 'Run plan' }).click()
    const timeline = page.getByRole('table', { name: /Per-node timeline/ })
    await timeline.waitFor()
    expect(await timeline.getByRole('row').count()).toBe(1 + 10) // header + one per node
    await page.getByRole('table', { name: '6 candidates' }).waitFor() // from the demo data
    await shoot('plan', true)
    // a request the API refuses is shown with its message
    await page.getByLabel(/^Request/).fill('{"user_id": "x"}')
    await page.getByRole('button', { name: 'Run plan' }).click()
    await page.getByRole('alert').filter({ hasText: 'user_id' }).waitFor()
    problems = problems.filter((p) => !/HTTP 4\d\d|status of 4\d\d/.test(p))
  })

  it("fits every page into a phone's width, tables keeping their role", async () => {
    await page.setViewportSize({ width: 390, height: 800 })
    for (const path of ['/ui/', '/ui/tasks', '/ui/dlq', '/ui/workers', '/ui/schedules', '/ui/submit', '/ui/plans', '/ui/plans/complex_dag']) {
      await page.goto(base + path)
      await page.getByRole('heading', { level: 2 }).first().waitFor()
      await page.waitForTimeout(300) // the page's data
      const width = await page.evaluate(() => document.documentElement.scrollWidth)
      expect(width, path).toBeLessThanOrEqual(390)
    }
    await page.goto(base + '/ui/workers')
    await page.getByRole('table', { name: /live workers/ }).waitFor()
  })

  it('submits any task type from a form made of its params schema, and shows a refused field', async () => {
    await page.goto(base + '/ui/submit')
    await page.getByLabel('Task type').selectOption('sleep')
    await page.getByText('Sleeps duration_ms').waitFor() // the type's description
    // a value the API refuses: the 422 is shown and its field marked
    await page.getByLabel('duration_ms').fill('-5')
    await page.getByRole('button', { name: 'Submit' }).click()
    await page.getByRole('alert').filter({ hasText: 'duration_ms' }).waitFor()
    expect(await page.getByLabel('duration_ms').getAttribute('aria-invalid')).toBe('true')
    // that 422 (and the browser's console line about it) was expected
    problems = problems.filter((p) => !p.includes('422'))
    await page.getByLabel('duration_ms').fill('50')
    expect(await page.getByRole('alert').count()).toBe(0) // edited: the refusal is gone
    await page.getByLabel('fail').selectOption('')
    await page.getByLabel('Priority').selectOption('high')
    await shoot('submit')
    await page.getByRole('button', { name: 'Submit' }).click()
    await page.waitForURL(/\/ui\/tasks\/[^/]+$/)
    await page.getByTestId('task-state').filter({ hasText: 'COMPLETED' }).waitFor({ timeout: 30_000 })
  })
})
