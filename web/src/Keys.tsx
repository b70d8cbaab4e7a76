import { useEffect, useState } from 'react'
import { api } from './api'
import type { components } from './api/schema'
import { NeedsAdmin, managesKeys, useMe } from './me'
import { CopyButton, Notice, PageHead, RolePill, Time } from './ui'

type NamedKey = components['schemas']['NamedKey']
type KeyList = components['schemas']['KeyList']

const ROLES: { role: NamedKey['role']; what: string }[] = [
  { role: 'viewer', what: 'reads: tasks, queues, workers, metrics, live feeds' },
  { role: 'operator', what: 'acts on tasks, queues, schedules and breakers; not keys' },
  { role: 'admin', what: 'anything, keys and the audit trail included' },
]

// Keys: the named API keys (the admin role's): who holds which role, a
// new key shown once, a key revoked.
export function Keys() {
  const me = useMe()
  if (!managesKeys(me)) {
    return (
      <section aria-labelledby="keys-h">
        <PageHead id="keys-h" title="API keys" />
        <NeedsAdmin page="Keys" />
      </section>
    )
  }
  return <KeysPage />
}

function KeysPage() {
  const [keys, setKeys] = useState<NamedKey[] | null>(null)
  const [error, setError] = useState('')
  const [done, setDone] = useState('')
  const [created, setCreated] = useState<NamedKey | null>(null)
  const [name, setName] = useState('')
  const [role, setRole] = useState<NamedKey['role']>('viewer')
  const [reload, setReload] = useState(0)

  useEffect(() => {
    api<KeyList>('/api/v1/keys')
      .then((r) => setKeys(r.keys))
      .catch((e: Error) => setError(e.message))
  }, [reload])

  async function create() {
    setError('')
    setDone('')
    try {
      const k = await api<NamedKey>('/api/v1/keys', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: name.trim(), role }),
      })
      setCreated(k)
      setName('')
      setReload((n) => n + 1)
    } catch (e) {
      setError((e as Error).message)
    }
  }

  async function revoke(n: string) {
    if (!confirm(`Revoke the key ${n}? Whoever uses it is refused from now on.`)) return
    setError('')
    setDone('')
    try {
      await api<NamedKey>(`/api/v1/keys/${encodeURIComponent(n)}`, { method: 'DELETE' })
      setDone(`Key ${n} revoked.`)
      if (created?.name === n) setCreated(null)
      setReload((x) => x + 1)
    } catch (e) {
      setError((e as Error).message)
    }
  }

  return (
    <section aria-labelledby="keys-h">
      <PageHead id="keys-h" title="API keys" sub="Named keys with a role, sent as Authorization: Bearer KEY. Only a key's hash is kept: a key is shown once, when it is made." />
      {error && <Notice kind="error">{error}</Notice>}
      {done && <Notice kind="ok">{done}</Notice>}
      {created?.key && (
        <div className="panel panel-body new-key" role="group" aria-label="New key">
          <p className="new-key-head">
            Key <b>{created.name}</b> <RolePill role={created.role} /> created. Copy it now:{' '}
            <strong>it is not shown again</strong>.
          </p>
          <div className="new-key-box">
            <code data-testid="new-key">{created.key}</code>
            <CopyButton text={created.key} label={`Copy key ${created.name}`} />
          </div>
          <button type="button" onClick={() => setCreated(null)}>
            Done, I have copied it
          </button>
        </div>
      )}
      <div className="sched-layout">
        {keys && (
          <div className="panel table-wrap">
            <table>
              <caption>{keys.length === 1 ? '1 key' : `${keys.length} keys`}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Role</th>
                  <th scope="col">Created</th>
                  <th scope="col">By</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {keys.length === 0 && (
                  <tr>
                    <td colSpan={5} className="empty">
                      No named key yet: the admin key is the only one.
                    </td>
                  </tr>
                )}
                {keys.map((k) => (
                  <tr key={k.name}>
                    <td>
                      <code>{k.name}</code>
                    </td>
                    <td>
                      <RolePill role={k.role} />
                    </td>
                    <td>
                      <Time iso={k.created_at} />
                    </td>
                    <td>{k.created_by ?? <span className="muted">–</span>}</td>
                    <td>
                      <button type="button" className="danger" onClick={() => void revoke(k.name)}>
                        Revoke {k.name}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <form
          className="card panel panel-body"
          noValidate
          onSubmit={(e) => {
            e.preventDefault()
            void create()
          }}
        >
          <h3>New key</h3>
          <label htmlFor="key-name">Name</label>
          <input id="key-name" value={name} onChange={(e) => setName(e.target.value)} className="mono" aria-describedby="key-name-hint" autoComplete="off" />
          <p id="key-name-hint" className="hint">
            1–64 of a–z, 0–9, “.”, “_”, “-”: it names the key in the audit trail.
          </p>
          <label htmlFor="key-role">Role</label>
          <select id="key-role" value={role} onChange={(e) => setRole(e.target.value as NamedKey['role'])} aria-describedby="key-role-hint">
            {ROLES.map((r) => (
              <option key={r.role} value={r.role}>
                {r.role}
              </option>
            ))}
          </select>
          <p id="key-role-hint" className="hint">
            {ROLES.find((r) => r.role === role)?.what}
          </p>
          <button type="submit" className="primary">
            Create key
          </button>
        </form>
      </div>
    </section>
  )
}
