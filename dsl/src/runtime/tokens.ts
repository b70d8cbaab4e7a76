// Key, P and EP: the registry as values a plan can name. Each token is typed
// as a branded number so that natural expressions (`Key.id * 0.5`) type-check
// in an editor; the compiler turns those expressions into IR from the source,
// and a token used as a number at run time fails loudly instead of giving NaN.
import {
  ENDPOINTS,
  KEYS,
  PARAMS,
  type EndpointKind,
  type EndpointTypes,
  type KeyInfo,
  type KeyType,
  type KeyTypes,
  type ParamInfo,
  type ParamType,
  type ParamTypes,
} from "../generated/registry.js";
import { DslError } from "./ir.js";

declare const keyBrand: unique symbol;
declare const paramBrand: unique symbol;
declare const endpointBrand: unique symbol;

/** A registry key (a row column). Usable in natural expressions as a number. */
export type KeyToken<N extends string = string, T extends KeyType = KeyType> = number & {
  readonly [keyBrand]: { name: N; type: T };
};
/** A registry param (set per request in param_overrides). Usable in natural expressions. */
export type ParamToken<N extends string = string, T extends ParamType = ParamType> = number & {
  readonly [paramBrand]: { name: N; type: T };
};
/** A registry endpoint. */
export type Endpoint<K extends EndpointKind = EndpointKind> = { readonly [endpointBrand]: K };

export type KeyTable = { readonly [N in keyof KeyTypes]: KeyToken<N & string, KeyTypes[N]> };
export type ParamTable = { readonly [N in keyof ParamTypes]: ParamToken<N & string, ParamTypes[N]> };
export type EndpointTable = {
  readonly [K in keyof EndpointTypes]: { readonly [N in keyof EndpointTypes[K]]: Endpoint<K & EndpointKind> };
};

// A token is recognised by identity (these maps), never by a field a plan
// could copy onto an object of its own.
const KEY_INFO = new WeakMap<object, KeyInfo>();
const PARAM_INFO = new WeakMap<object, ParamInfo>();
const ENDPOINT_INFO = new WeakMap<object, EndpointValue>();

interface EndpointValue {
  readonly id: string;
  readonly name: string;
  readonly kind: EndpointKind;
}

function notANumber(what: string): never {
  throw new DslError(
    `${what} was used as a number at run time; write natural expressions inline as the value of vm's expr or filter's pred (or use E.* / Pred.*)`,
  );
}

function token<I>(map: WeakMap<object, I>, info: I, what: string): object {
  const value = {};
  Object.defineProperty(value, Symbol.toPrimitive, {
    value: () => notANumber(what),
  });
  Object.defineProperty(value, Symbol.toStringTag, { value: what });
  map.set(value, Object.freeze({ ...info }));
  return Object.freeze(value);
}

function table<V>(entries: [string, V][], what: string): any {
  const obj: Record<string, V> = Object.create(null);
  for (const [name, v] of entries) obj[name] = v;
  Object.freeze(obj);
  // An unknown name is a compile error with file:line:column (the compiler
  // checks the source); at run time it is still refused, never undefined.
  return new Proxy(obj, {
    get(target, prop) {
      if (typeof prop === "symbol") return undefined;
      if (Object.prototype.hasOwnProperty.call(target, prop)) return target[prop];
      throw new DslError(`unknown ${what} '${prop}'`);
    },
  });
}

export const Key: KeyTable = table(
  KEYS.map((k) => [k.name, token(KEY_INFO, k, `Key.${k.name}`)]),
  "key",
);
export const P: ParamTable = table(
  PARAMS.map((p) => [p.name, token(PARAM_INFO, p, `P.${p.name}`)]),
  "param",
);
export const EP: EndpointTable = table(
  [...new Set(ENDPOINTS.map((e) => e.kind))].map((kind) => [
    kind,
    table(
      ENDPOINTS.filter((e) => e.kind === kind).map((e) => [
        e.name,
        token(ENDPOINT_INFO, { id: e.id, name: e.name, kind: e.kind }, `EP.${kind}.${e.name}`),
      ]),
      `${kind} endpoint`,
    ),
  ]),
  "endpoint kind",
);

export function asKey(v: unknown): KeyInfo | undefined {
  return typeof v === "object" && v !== null ? KEY_INFO.get(v) : undefined;
}
export function asParam(v: unknown): ParamInfo | undefined {
  return typeof v === "object" && v !== null ? PARAM_INFO.get(v) : undefined;
}
export function asEndpoint(v: unknown): EndpointValue | undefined {
  return typeof v === "object" && v !== null ? ENDPOINT_INFO.get(v) : undefined;
}
