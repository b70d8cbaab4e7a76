import type { AnchorHTMLAttributes } from 'react'
import { navigate } from './route'

export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  return (
    <a
      {...props}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
        e.preventDefault()
        navigate(props.href)
      }}
    />
  )
}
