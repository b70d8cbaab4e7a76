import { describe, expect, it } from 'vitest'
import { route } from './route'

describe('route', () => {
  it.each([
    ['/ui/', '', []],
    ['/ui', '', []],
    ['/ui/tasks', 'tasks', []],
    ['/ui/tasks/abc/', 'tasks', ['abc']],
    ['/ui/submit', 'submit', []],
  ])('%s', (path, page, rest) => {
    expect(route(path)).toEqual({ page, rest })
  })
})
