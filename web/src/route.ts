import { useEffect, useState } from 'react'

// A tiny client router over history.pushState: every page is a URL under
// /ui/ (filters in the query string), so a reload or a shared link lands
// on the same view (the server answers the app for any /ui/ path).
export const BASE = '/ui'

export function navigate(to: string): void {
  history.pushState(null, '', to)
  dispatchEvent(new PopStateEvent('popstate'))
}

export function useLocation(): URL {
  const [url, setUrl] = useState(() => new URL(location.href))
  useEffect(() => {
    const on = () => setUrl(new URL(location.href))
    addEventListener('popstate', on)
    return () => removeEventListener('popstate', on)
  }, [])
  return url
}

// route splits a /ui/... path into its page and the rest.
export function route(pathname: string): { page: string; rest: string[] } {
  const parts = pathname.replace(/^\/ui\/?/, '').split('/').filter(Boolean)
  return { page: parts[0] ?? '', rest: parts.slice(1) }
}
