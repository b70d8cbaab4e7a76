import { describe, expect, it } from 'vitest'
import { FieldError, fieldsOf, paramsOf } from './schemaForm'

// the report type's schema as the API serves it (declared order kept)
const report = {
  type: 'object',
  properties: {
    quarter: { type: 'string', enum: ['Q1', 'Q2', 'Q3', 'Q4'], description: 'the quarter' },
    year: { type: 'integer', minimum: 2000, maximum: 2100 },
    data: { type: 'object' },
    ratio: { type: 'number' },
    draft: { type: 'boolean' },
    content: { type: 'string' },
    title: { type: 'string' },
    user_id: { type: ['integer', 'string'] },
  },
  required: ['quarter', 'year', 'data'],
}

describe('fieldsOf', () => {
  it('makes one field per property, of the kind its type asks for', () => {
    const f = fieldsOf(report)
    expect(f.map((x) => [x.name, x.kind, x.required])).toEqual([
      ['quarter', 'select', true],
      ['year', 'integer', true],
      ['data', 'json', true],
      ['ratio', 'number', false],
      ['draft', 'checkbox', false],
      ['content', 'textarea', false],
      ['title', 'text', false],
      ['user_id', 'integer', false],
    ])
    expect(f[0].options).toEqual(['Q1', 'Q2', 'Q3', 'Q4'])
    expect(f[1].min).toBe(2000)
  })
  it('reads properties given as an ordered list, and no schema at all', () => {
    expect(fieldsOf({ properties: [{ name: 'b', type: 'string' }, { name: 'a', type: 'integer' }] }).map((x) => x.name)).toEqual(['b', 'a'])
    expect(fieldsOf({ type: 'object' })).toEqual([])
    expect(fieldsOf(undefined)).toEqual([])
  })
})

describe('paramsOf', () => {
  const f = fieldsOf(report)
  it('turns the values into params, leaving empty ones out', () => {
    expect(paramsOf(f, { quarter: 'Q4', year: '2024', data: '{"revenue":[1,2]}', ratio: '', draft: true, title: 'x' })).toEqual({
      quarter: 'Q4',
      year: 2024,
      data: { revenue: [1, 2] },
      draft: true,
      title: 'x',
    })
  })
  it('names the field it cannot read', () => {
    expect(() => paramsOf(f, { year: '20.5' })).toThrow(FieldError)
    expect(() => paramsOf(f, { year: '20.5' })).toThrow(/year/)
    expect(() => paramsOf(f, { data: '{nope' })).toThrow(/data: not valid JSON/)
    expect(() => paramsOf(f, { ratio: 'many' })).toThrow(/ratio/)
  })
})
