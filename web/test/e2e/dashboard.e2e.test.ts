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
  proc = spawn(join(tmp, 'taskflow'), ['dev', '--addr', `127.0.0.1:${port}`, '--dev-redis-addr', '127.0.0.1:0', '--demo-data'], { env, stdio: 'ignore' })
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
    // EventSource streams are cut when the page closes, and a read still
    // in flight when the test moves to another page is aborted by the
    // browser (net::ERR_ABORTED): neither is a failure the page saw.
    if (r.url().includes('/stream')) return
    if (r.method() === 'GET' && r.failure()?.errorText === 'net::ERR_ABORTED') return
    problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`)
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
    await page.waitForTimeout(50) // the charts redraw in the theme's colours
    const path = process.env.UI_SCREENSHOTS ? join(root, 'docs/img', `dashboard-${name}-${scheme}.png`) : undefined
    await page.screenshot({ path, fullPage })
  }
  await page.emulateMedia({ colorScheme: null })
}

// submitTask posts a task as the admin (open mode) and returns its id.
async function submitTask(body: Record<string, unknown>): Promise<string> {
  const r = await fetch(base + '/api/v1/tasks', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
  expect(r.status).toBe(201)
  return ((await r.json()) as { task_id: string }).task_id
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await f()
    if (v !== undefined) return v
    if (Date.now() > end) throw new Error('timed out waiting for ' + what)
    await new Promise((r) => setTimeout(r, 100))
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
    // one set of latency figures: the chart's caption, the tile and the
    // table all show the window's p50/p99 as the API computed them
    const win = ((await (await fetch(base + '/api/v1/stats/series')).json()) as { window: { start_p50_ms: number; start_p99_ms: number } }).window
    const cells = page.getByRole('table', { name: 'Over the window' }).getByRole('cell')
    const p50 = (await cells.nth(4).textContent())!
    const p99 = (await cells.nth(5).textContent())!
    expect(Number(p99.replace(/[^0-9.]/g, ''))).toBeCloseTo(win.start_p99_ms, 0)
    const caption = (await page.getByTestId('latency-caption').textContent())!
    expect(caption).toContain(`p50 ${p50}`)
    expect(caption).toContain(`p99 ${p99}`)
    expect(caption).not.toContain('mean')
    expect(await page.getByTestId('kpi-p99').textContent()).toContain(p99)
    for (const tile of ['kpi-throughput', 'kpi-backlog', 'kpi-failure', 'kpi-p99']) await page.getByTestId(tile).waitFor()
    // the legends show the latest values without a hover
    const legend = page.getByRole('list', { name: /^Throughput: latest values/ })
    expect(await legend.textContent()).toMatch(/completed\/s \d/)
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
    await page.getByRole('link', { name: 'Tasks', exact: true }).click()
    await page.getByRole('table').waitFor()
    await page.getByRole('navigation', { name: 'States' }).getByRole('link', { name: /^COMPLETED/ }).click()
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

  it('lists the named queues, pauses and resumes one, and sets and removes a limit', async () => {
    await submitTask({ task_type: 'noop', queue: 'e2e-emails', run_at: new Date(Date.now() + 3600_000).toISOString() })
    await page.goto(base + '/ui/queues')
    const row = page.getByTestId('queue-e2e-emails')
    await row.waitFor()
    await row.getByRole('button', { name: 'Pause e2e-emails' }).click()
    await page.getByRole('status').filter({ hasText: 'Queue e2e-emails paused.' }).waitFor()
    await row.getByText('paused').waitFor()
    await shoot('queues')
    await row.getByRole('button', { name: 'Resume e2e-emails' }).click()
    await row.getByText('running').waitFor()
    await page.getByLabel('Scope').selectOption('key')
    await page.getByLabel('Name').fill('tenant-1')
    await page.getByLabel('Concurrency: at most running at once').fill('2')
    await page.getByRole('button', { name: 'Set limit' }).click()
    await page.getByRole('cell', { name: '2 at once' }).waitFor()
    // OPENROUTER_RATE_LIMIT shows as a rate limit on summarize (dev runs the LLM path here)
    await page.getByRole('row').filter({ hasText: 'summarize' }).filter({ hasText: 'per 60 s' }).waitFor()
    await page.getByRole('button', { name: 'Remove limit tenant-1' }).click()
    await page.getByRole('button', { name: 'Remove limit tenant-1' }).waitFor({ state: 'detached' })
    await page.getByLabel('Task type to pause').fill('e2e.paused')
    await page.getByRole('button', { name: 'Pause task type' }).click()
    await page.getByTestId('paused-type-e2e.paused').waitFor()
    await page.getByRole('button', { name: 'Resume e2e.paused' }).click()
    await page.getByTestId('paused-type-e2e.paused').waitFor({ state: 'detached' })
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
    await page.getByRole('link', { name: 'Tasks', exact: true }).click()
    await page.getByRole('table', { name: /^2 tasks/ }).waitFor()
    // a session's state tabs count its own tasks
    await page.getByTestId('count-ALL').filter({ hasText: /^2$/ }).waitFor()
    // GET /api/v1/me tells the UI it is a session: no probe is refused
    await page.getByTestId('whoami').filter({ hasText: sess.session_id.slice(0, 8) }).waitFor()
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
    expect(await page.getByRole('button', { name: 'Cancel', exact: true }).count()).toBe(0) // nothing left to cancel
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

  it('walks every page in light and dark at 1440 and 390 px: nothing overflows, the menu works, tables keep their role', async () => {
    const done = await submitTask({ task_type: 'noop' })
    const sess = (await (await fetch(base + '/api/v1/sessions', { method: 'POST' })).json()) as { session_id: string }
    const pages: [string, string][] = [
      ['/ui/', 'Overview'],
      ['/ui/tasks', 'Tasks'],
      ['/ui/tasks/' + done, 'Task'],
      ['/ui/submit', 'Submit a task'],
      ['/ui/dlq', 'Dead letters'],
      ['/ui/workers', 'Workers'],
      ['/ui/schedules', 'Schedules'],
      ['/ui/queues', 'Queues'],
      ['/ui/sessions', 'Sessions'],
      ['/ui/sessions?session=' + sess.session_id, 'Sessions'],
      ['/ui/plans', 'Plans'],
      ['/ui/plans/complex_dag', 'Plan complex_dag'],
      ['/ui/keys', 'API keys'],
      ['/ui/audit', 'Audit trail'],
    ]
    for (const width of [1440, 390]) {
      await page.setViewportSize({ width, height: 900 })
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        for (const [path, heading] of pages) {
          await page.goto(base + path)
          await page.getByRole('heading', { level: 2, name: new RegExp('^' + heading) }).first().waitFor()
          // the page's data
          await (path === '/ui/submit' ? page.getByLabel('Task type') : page.getByRole('table').first()).waitFor()
          await page.waitForTimeout(150)
          const at = `${path} ${width}px ${scheme}`
          expect(await page.evaluate(() => document.documentElement.scrollWidth), at).toBeLessThanOrEqual(width)
          const nav = page.getByRole('navigation', { name: 'Main' })
          if (width > 760) {
            expect(await nav.getByRole('link', { name: 'Workers' }).isVisible(), at).toBe(true)
            expect(await page.getByRole('button', { name: 'Menu' }).isVisible(), at).toBe(false)
          } else {
            expect(await nav.isVisible(), at).toBe(false) // folded behind the menu
            await page.getByRole('button', { name: 'Menu' }).click()
            expect(await nav.getByRole('link', { name: 'Workers' }).isVisible(), at).toBe(true)
            await page.getByRole('button', { name: 'Menu' }).click()
            expect(await nav.isVisible(), at).toBe(false)
          }
        }
      }
    }
    // the menu leads somewhere on a phone
    await page.emulateMedia({ colorScheme: null })
    await page.goto(base + '/ui/')
    await page.getByRole('button', { name: 'Menu' }).click()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks', exact: true }).click()
    await page.waitForURL(/\/ui\/tasks$/)
    await page.getByRole('table', { name: /tasks, page 1/ }).waitFor()
    expect(await page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(false) // closed on arrival
    await shoot('tasks-mobile', true)
    await page.goto(base + '/ui/')
    await page.getByTestId('kpi-throughput').waitFor()
    await page.getByRole('img', { name: /^Throughput chart/ }).waitFor()
    await shoot('overview-mobile', true)
  })

  it('copies a full id, expands a cut error, counts each state tab, and gives every relative time its exact one', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base })
    const id = await submitTask({ task_type: 'sleep', params: { duration_ms: 0, fail: 'panic' }, max_retries: 0 })
    await until('the panicking task in the DLQ', async () => {
      const t = (await (await fetch(base + '/api/v1/tasks/' + id)).json()) as { state: string }
      return t.state === 'DLQ' ? true : undefined
    })
    await page.goto(base + '/ui/dlq?error_type=Panic')
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: id }) })
    await row.waitFor()
    // the id shows short; its copy button copies the whole of it
    expect((await row.getByRole('link', { name: id }).textContent())!.length).toBeLessThan(12)
    const copy = row.getByRole('button', { name: `Copy id ${id}` })
    expect(await copy.getAttribute('data-copy')).toBe(id)
    await copy.click()
    await row.locator('[data-copied]').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(id)
    // the stack trace shows as its first line until clicked
    const toggle = row.getByRole('button', { name: /^panic: sleep: asked to panic/ })
    expect(await toggle.getAttribute('aria-expanded')).toBe('false')
    expect(await row.getByText(/goroutine \d+/).count()).toBe(0)
    const rowHeight = (await row.boundingBox())!.height
    expect(rowHeight).toBeLessThan(80)
    await toggle.click()
    expect(await toggle.getAttribute('aria-expanded')).toBe('true')
    await row.getByText(/goroutine \d+/).waitFor()
    expect((await row.boundingBox())!.height).toBeGreaterThan(rowHeight)
    // a relative time, the exact one in its title
    const when = row.locator('time').first()
    expect(await when.textContent()).toMatch(/ago$|^just now$/)
    expect(await when.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/)
    await shoot('dlq-expanded')

    // the state tabs count what the API counts, each with its glyph and word
    await page.goto(base + '/ui/tasks')
    const states = ((await (await fetch(base + '/api/v1/queues/status')).json()) as { states: Record<string, number> }).states
    for (const st of ['COMPLETED', 'DLQ']) {
      await page.getByTestId('count-' + st).filter({ hasText: new RegExp(`^${states[st].toLocaleString('en-US')}$`) }).waitFor()
    }
    const tabs = page.getByRole('navigation', { name: 'States' })
    expect(await tabs.getByRole('link', { name: /^DLQ/ }).locator('svg').count()).toBe(1)
    await tabs.getByRole('link', { name: /^DLQ/ }).click()
    await page.waitForURL(/state=DLQ/)
    await page.getByRole('link', { name: id }).waitFor()
    expect(await page.getByRole('link', { name: /^DLQ/ }).getAttribute('aria-current')).toBe('page')

    // an external task no service takes waits, and says so
    const ext = await submitTask({ task_type: 'text.wordcount', params: { text: 'one two' } })
    await page.goto(base + '/ui/tasks/' + ext)
    await page.getByTestId('task-state').filter({ hasText: 'WAITING FOR SERVICE' }).waitFor({ timeout: 15_000 })
    await page.getByRole('status').filter({ hasText: /no service for text\.wordcount/ }).waitFor()
    await shoot('task-waiting')
    // and so does its row in the list (the listing carries waiting_for too)
    await page.goto(base + '/ui/tasks?type=text.wordcount')
    const waiting = page.getByRole('row').filter({ has: page.getByRole('link', { name: ext }) })
    await waiting.getByText('WAITING FOR SERVICE').waitFor()
    expect(await waiting.getByText('PENDING', { exact: true }).count()).toBe(0)
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

  it('submits into a named queue with a limit key and a unique key; the same key again is answered as the duplicate of the first', async () => {
    // a queue that exists, for the Queue field's suggestions
    await submitTask({ task_type: 'noop', queue: 'e2e-known', run_at: new Date(Date.now() + 3600_000).toISOString() })
    const keys: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/tasks') keys.push(r.headers()['idempotency-key'] ?? '')
    })
    const unique = `e2e-report-${Date.now()}`
    const fill = async (queue: string) => {
      await page.goto(base + '/ui/submit')
      await page.getByLabel('Task type').selectOption('noop')
      await page.getByText('Queue, limit key, unique key').click()
      await page.getByLabel('Queue', { exact: true }).fill(queue)
      await page.getByLabel('Limit key', { exact: true }).fill('tenant-e2e')
      await page.getByLabel('Unique key', { exact: true }).fill(unique)
      await page.getByLabel('Unique for (seconds)').fill('600')
    }
    await fill('Reports!')
    await page.locator('#queue-names option[value="e2e-known"]').waitFor({ state: 'attached' })
    // a queue name the API would refuse is refused on the form, nothing sent
    await page.getByRole('button', { name: 'Submit' }).click()
    await page.getByRole('alert').filter({ hasText: 'queue' }).waitFor()
    expect(await page.getByLabel('Queue', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    expect(keys).toEqual([])
    await page.getByLabel('Queue', { exact: true }).fill('e2e-reports')
    expect(await page.getByRole('alert').count()).toBe(0)
    await shoot('submit-controls')
    await page.getByRole('button', { name: 'Submit' }).click()
    await page.waitForURL(/\/ui\/tasks\/[^/]+$/)
    const first = page.url().split('/').pop()!
    expect(await page.getByTestId('task-queue').textContent()).toBe('e2e-reports')
    expect(await page.getByTestId('task-limit-key').textContent()).toBe('tenant-e2e')

    // the same unique key again: the API answers the first task, the form says so
    await fill('e2e-reports')
    await page.getByRole('button', { name: 'Submit' }).click()
    const answer = page.getByTestId('submit-answer')
    await answer.filter({ hasText: 'Duplicate: nothing created.' }).waitFor()
    expect(await answer.textContent()).toContain(first)
    expect(page.url()).toBe(base + '/ui/submit')
    expect(await answer.getByTestId('replayed').count()).toBe(0)
    await answer.getByRole('link', { name: `Open task ${first}` }).click()
    await page.waitForURL(base + '/ui/tasks/' + first)
    await page.getByTestId('task-queue').waitFor()
    // and its row in the task list says the same
    await page.goto(base + '/ui/tasks?type=noop')
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: first }) })
    expect(await row.getByTestId('row-queue').textContent()).toBe('queue e2e-reports')
    expect(await row.getByTestId('row-limit-key').textContent()).toBe('key tenant-e2e')

    // every submit carried its own Idempotency-Key, a UUID
    expect(keys).toHaveLength(2)
    for (const k of keys) expect(k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(keys[0]).not.toBe(keys[1])
  })

  it('resends a submit whose answer was lost under the same Idempotency-Key: one task, the answer shown as replayed', async () => {
    const keys: string[] = []
    const ids: string[] = []
    let lose = true
    // the first POST reaches the API (the task is written) but its answer
    // is lost on the way back, as when a connection drops
    await page.route('**/api/v1/tasks', async (route) => {
      if (route.request().method() !== 'POST') return route.continue()
      keys.push(route.request().headers()['idempotency-key'] ?? '')
      const res = await route.fetch()
      ids.push(((await res.json()) as { task_id: string }).task_id)
      if (lose) {
        lose = false
        return route.abort('connectionreset')
      }
      return route.fulfill({ response: res })
    })
    await page.goto(base + '/ui/submit')
    await page.getByLabel('Task type').selectOption('noop')
    await page.getByRole('button', { name: 'Submit' }).click()
    await page.getByRole('alert').waitFor()
    // that lost answer (and the browser's console line about it) was the test's doing
    problems = problems.filter((p) => !p.includes('/api/v1/tasks') && !p.includes('ERR_CONNECTION_RESET'))
    await page.getByRole('button', { name: 'Submit' }).click()
    const answer = page.getByTestId('submit-answer')
    await answer.getByTestId('replayed').waitFor()
    expect(await answer.textContent()).toContain('created by an earlier try')
    expect(keys).toHaveLength(2)
    expect(keys[1]).toBe(keys[0])
    expect(ids[1]).toBe(ids[0])
    await answer.getByRole('link', { name: `Open task ${ids[0]}` }).waitFor()
    // an edit makes the next submit a new one: a new key, a new task
    await page.getByLabel('Priority').selectOption('high')
    await page.getByRole('button', { name: 'Submit' }).click()
    await page.waitForURL(/\/ui\/tasks\/[^/]+$/)
    expect(keys).toHaveLength(3)
    expect(keys[2]).not.toBe(keys[0])
    expect(page.url().split('/').pop()).not.toBe(ids[0])
  })

  // keys of each role, made through the API (open mode: the caller is the
  // open admin); a named key presented as a bearer keeps its role
  async function makeKey(name: string, role: string): Promise<string> {
    const r = await fetch(base + '/api/v1/keys', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name, role }) })
    expect(r.status).toBe(201)
    return ((await r.json()) as { key: string }).key
  }
  const actionButton = /^(Retry|Cancel|Delete|Submit again|Open |Reset |Create schedule|Retry selected|Delete selected|Retry all|Delete all)/

  it('signed in with a viewer key: the role in the header, no action anywhere, Submit says read-only', async () => {
    const viewer = await makeKey('e2e-viewer', 'viewer')
    const failed = await submitTask({ task_type: 'sleep', params: { duration_ms: 0, fail: 'permanent' }, max_retries: 0 })
    await fetch(base + '/api/v1/schedules', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ cron: '@hourly', task_type: 'noop' }) })
    // a bad token lands on the sign-in form, which takes a named key
    // (set before the app's first script, once: the form's key replaces it)
    await page.addInitScript(() => {
      if (sessionStorage.getItem('e2e.bad-token-set')) return
      sessionStorage.setItem('e2e.bad-token-set', '1')
      sessionStorage.setItem('taskflow.token', 'tfk_not-a-key')
    })
    await page.goto(base + '/ui/')
    await page.getByRole('alert').waitFor()
    problems = problems.filter((p) => !(p.includes('401') && (p.includes('/api/v1/me') || p.startsWith('console'))))
    await page.getByLabel(/named key/).fill(viewer)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByTestId('whoami').filter({ hasText: 'e2e-viewer' }).waitFor()
    expect(await page.getByTestId('whoami').textContent()).toMatch(/viewer.*e2e-viewer/)
    const nav = page.getByRole('navigation', { name: 'Main' })
    expect(await nav.getByRole('link', { name: 'Keys' }).count()).toBe(0)
    expect(await nav.getByRole('link', { name: 'Audit' }).count()).toBe(0)

    await page.goto(base + '/ui/tasks/' + failed)
    await page.getByTestId('task-state').filter({ hasText: /FAILED|DLQ/ }).waitFor({ timeout: 15_000 })
    await page.getByTestId('read-only').waitFor()
    expect(await page.getByRole('button', { name: actionButton }).count()).toBe(0)
    for (const [path, what] of [
      ['/ui/dlq', 'dead letters'],
      ['/ui/schedules', 'schedule'],
    ]) {
      await page.goto(base + path)
      await page.getByRole('table').first().waitFor()
      await page.getByTestId('read-only').filter({ hasText: what }).waitFor()
      expect(await page.getByRole('button', { name: actionButton }).count(), path).toBe(0)
      expect(await page.getByRole('checkbox').count(), path).toBe(0)
    }
    await page.goto(base + '/ui/workers')
    await page.getByTestId('breaker-openrouter').waitFor()
    expect(await page.getByRole('button', { name: actionButton }).count()).toBe(0)
    await page.goto(base + '/ui/submit')
    await page.getByTestId('read-only').filter({ hasText: 'submitting a task' }).waitFor()
    expect(await page.getByRole('button', { name: 'Submit' }).count()).toBe(0)
    // the admin's pages say whose they are, without asking the API
    await page.goto(base + '/ui/keys')
    await page.getByText('The Keys page needs the admin role').waitFor()
  })

  it('signed in with an operator key: actions offered, no Keys or Audit', async () => {
    const operator = await makeKey('e2e-operator', 'operator')
    const failed = await submitTask({ task_type: 'sleep', params: { duration_ms: 0, fail: 'permanent' }, max_retries: 0 })
    await page.addInitScript((t) => sessionStorage.setItem('taskflow.token', t), operator)
    await page.goto(base + '/ui/tasks/' + failed)
    await page.getByTestId('whoami').filter({ hasText: 'e2e-operator' }).waitFor()
    await page.getByTestId('task-state').filter({ hasText: /FAILED|DLQ/ }).waitFor({ timeout: 15_000 })
    await page.getByRole('button', { name: 'Retry', exact: true }).waitFor()
    await page.getByRole('button', { name: 'Delete', exact: true }).waitFor()
    // an operator's change is its own line in the audit trail
    await page.getByRole('button', { name: 'Retry', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Retry: done' }).waitFor()
    const nav = page.getByRole('navigation', { name: 'Main' })
    expect(await nav.getByRole('link', { name: 'Keys' }).count()).toBe(0)
    expect(await nav.getByRole('link', { name: 'Audit' }).count()).toBe(0)
    await page.goto(base + '/ui/dlq')
    await page.getByRole('button', { name: /^Retry selected/ }).waitFor()
    await page.goto(base + '/ui/workers')
    await page.getByRole('button', { name: 'Open openrouter' }).waitFor()
    await page.goto(base + '/ui/schedules')
    await page.getByRole('button', { name: 'Create schedule' }).waitFor()
    await page.goto(base + '/ui/submit')
    await page.getByRole('button', { name: 'Submit' }).waitFor()
    await page.goto(base + '/ui/audit')
    await page.getByText('The Audit page needs the admin role').waitFor()
  })

  it('as the admin: creates a key shown once with a copy button, revokes it, and reads both on the Audit page', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base })
    page.on('dialog', (d) => void d.accept())
    await page.goto(base + '/ui/')
    const nav = page.getByRole('navigation', { name: 'Main' })
    await nav.getByRole('link', { name: 'Keys' }).click()
    await page.waitForURL(/\/ui\/keys$/)
    await page.getByRole('table', { name: /keys?$/ }).waitFor()
    await page.getByLabel('Name').fill('e2e-temp')
    await page.getByLabel('Role').selectOption('operator')
    await page.getByRole('button', { name: 'Create key' }).click()
    const box = page.getByRole('group', { name: 'New key' })
    await box.getByText('it is not shown again').waitFor()
    const key = (await box.getByTestId('new-key').textContent())!
    expect(key).toMatch(/^tfk_/)
    await box.getByRole('button', { name: 'Copy key e2e-temp' }).click()
    await box.locator('[data-copied]').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key)
    const row = page.getByRole('row').filter({ has: page.getByText('e2e-temp', { exact: true }) })
    await row.getByText('operator').waitFor()
    // the key works, with its role
    const me = (await (await fetch(base + '/api/v1/me', { headers: { Authorization: 'Bearer ' + key } })).json()) as { role: string; name: string }
    expect(me).toMatchObject({ role: 'operator', name: 'e2e-temp' })
    await shoot('keys')
    // the listing never shows it again
    await page.reload()
    await row.waitFor()
    expect(await page.getByText(key).count()).toBe(0)
    await page.getByRole('button', { name: 'Revoke e2e-temp' }).click()
    await page.getByRole('status').filter({ hasText: 'Key e2e-temp revoked.' }).waitFor()
    // the listing is read again after the answer: the row goes with it
    await row.waitFor({ state: 'detached' })
    expect((await fetch(base + '/api/v1/me', { headers: { Authorization: 'Bearer ' + key } })).status).toBe(401)

    await nav.getByRole('link', { name: 'Audit' }).click()
    await page.waitForURL(/\/ui\/audit$/)
    const entries = page.getByTestId('audit-entry')
    await entries.first().waitFor()
    // newest first: the revocation, then the creation
    await expect.poll(async () => (await entries.nth(0).textContent()) ?? '').toContain('DELETE /api/v1/keys/{name}')
    expect(await entries.nth(0).textContent()).toContain('name=e2e-temp')
    expect(await entries.nth(1).textContent()).toContain('POST /api/v1/keys')
    expect(await entries.nth(0).getByRole('link', { name: 'open' }).count()).toBe(1)
    await entries.filter({ hasText: 'e2e-operator' }).filter({ hasText: 'POST /api/v1/tasks/{task_id}/retry' }).getByText('operator', { exact: true }).waitFor()
    const when = entries.nth(0).locator('time')
    expect(await when.textContent()).toMatch(/ago$|^just now$/)
    expect(await when.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/)
    await shoot('audit')
    // filter by actor; Older pages on with the cursor
    await page.getByLabel('Actor').fill('nobody')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.getByText('No change recorded by nobody.').waitFor()
    await page.getByRole('button', { name: 'Clear' }).click()
    await entries.first().waitFor()
    for (let i = 0; i < 60; i++) await makeKey(`e2e-page-${i}`, 'viewer')
    await page.reload()
    await page.getByRole('table', { name: '50 changes, the newest' }).waitFor()
    await page.getByRole('button', { name: 'Older' }).click()
    await page.waitForURL(/before=/)
    await page.getByRole('table', { name: /changes, older page$/ }).waitFor()
    expect(await entries.count()).toBeGreaterThan(0)
  })
})
