import { createContext, useContext } from 'react'
import type { components } from './api/schema'
import { Notice } from './ui'

// Who the dashboard is signed in as (GET /api/v1/me), so that each page
// offers only what the caller may do: a viewer's key reads, an operator's
// acts but manages no keys, the admin role does anything.
export type Me = components['schemas']['Me']

export const MeContext = createContext<Me | null>(null)

export function useMe(): Me | null {
  return useContext(MeContext)
}

// canChange: anything but a viewer's key may act (a session on its own tasks).
export function canChange(me: Me | null): boolean {
  return me?.role !== 'viewer'
}

// managesKeys: the admin role (the admin key, a named admin key, open mode).
export function managesKeys(me: Me | null): boolean {
  return me?.kind === 'key' && me.role === 'admin'
}

// READ_ONLY is the tooltip of what a viewer cannot do.
export const READ_ONLY = 'read-only: viewer key'

// useCanChange is canChange for the signed-in caller.
export function useCanChange(): boolean {
  return canChange(useMe())
}

// ReadOnly says why a page offers no actions to a viewer's key; what
// names them ("retrying or deleting dead letters").
export function ReadOnly({ what }: { what: string }) {
  const me = useMe()
  return (
    <Notice kind="info">
      <span data-testid="read-only" title={READ_ONLY}>
        Read-only: signed in with the viewer key <b>{me?.name}</b>; {what} needs an operator or admin key.
      </span>
    </Notice>
  )
}

// NeedsAdmin is what a page of the admin role shows anyone else.
export function NeedsAdmin({ page }: { page: string }) {
  const me = useMe()
  return (
    <Notice kind="info">
      The {page} page needs the admin role; you are signed in as {me?.role ? `${me.role} · ${me.name}` : 'a session'}.
    </Notice>
  )
}
