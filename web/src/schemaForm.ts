// A task type's params form, generated from its params JSON Schema
// (GET /api/v1/task-types): one input per property, of the kind its type
// asks for; values are turned back into the params object the API checks.

export type FieldKind = 'text' | 'textarea' | 'number' | 'integer' | 'select' | 'checkbox' | 'json'

export interface Field {
  name: string
  kind: FieldKind
  required: boolean
  description: string
  options: string[] // select
  min?: number
  max?: number
}

type Schema = {
  properties?: Record<string, PropSchema> | PropSchema[]
  required?: string[]
}
type PropSchema = {
  name?: string
  type?: string | string[]
  enum?: unknown[]
  description?: string
  minimum?: number
  maximum?: number
  maxLength?: number
}

// Long text goes in a text area: a declared length above a line, or a name
// that says so.
const longText = /^(content|text|csv|document|body)$/

// fieldsOf lists the form's fields in the schema's order (properties as an
// object keep their written order).
export function fieldsOf(schema: unknown): Field[] {
  const s = (schema ?? {}) as Schema
  const required = new Set(s.required ?? [])
  const props: [string, PropSchema][] = Array.isArray(s.properties)
    ? s.properties.map((p) => [p.name ?? '', p] as [string, PropSchema])
    : Object.entries(s.properties ?? {})
  return props
    .filter(([name]) => name !== '')
    .map(([name, p]) => {
      const type = Array.isArray(p.type) ? (p.type.includes('integer') ? 'integer' : p.type[0]) : p.type
      let kind: FieldKind = 'json'
      if (p.enum && p.enum.every((v) => typeof v === 'string')) kind = 'select'
      else if (type === 'string') kind = longText.test(name) || (p.maxLength ?? 0) > 200 ? 'textarea' : 'text'
      else if (type === 'integer') kind = 'integer'
      else if (type === 'number') kind = 'number'
      else if (type === 'boolean') kind = 'checkbox'
      return {
        name,
        kind,
        required: required.has(name),
        description: p.description ?? '',
        options: kind === 'select' ? (p.enum as string[]) : [],
        min: p.minimum,
        max: p.maximum,
      }
    })
}

// paramsOf builds the params object from the form's values: empty fields
// are left out (the type's defaults apply), numbers are numbers, objects
// and arrays are parsed JSON. A value that cannot be read is an error
// naming its field, before anything is sent.
export function paramsOf(fields: Field[], values: Record<string, string | boolean>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of fields) {
    const v = values[f.name]
    if (f.kind === 'checkbox') {
      if (v === true) out[f.name] = true
      continue
    }
    if (typeof v !== 'string' || v.trim() === '') continue
    switch (f.kind) {
      case 'integer':
      case 'number': {
        const n = Number(v)
        if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n))) {
          throw new FieldError(f.name, `${f.name}: "${v}" is not ${f.kind === 'integer' ? 'a whole number' : 'a number'}`)
        }
        out[f.name] = n
        break
      }
      case 'json':
        try {
          out[f.name] = JSON.parse(v)
        } catch {
          throw new FieldError(f.name, `${f.name}: not valid JSON`)
        }
        break
      default:
        out[f.name] = v
    }
  }
  return out
}

export class FieldError extends Error {
  constructor(
    public field: string,
    message: string,
  ) {
    super(message)
  }
}
