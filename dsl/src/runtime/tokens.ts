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

const TOKEN = "__dsl_token";

interface KeyValue {
  readonly [TOKEN]: "key";
  readonly info: KeyInfo;
}
interface ParamValue {
  readonly [TOKEN]: "param";
  readonly info: ParamInfo;
}
interface EndpointValue {
  readonly [TOKEN]: "endpoint";
  readonly id: string;
  readonly name: string;
  readonly kind: EndpointKind;
}

function notANumber(what: string): never {
  throw new DslError(
    `${what} was used as a number at run time; write natural expressions inline as the value of vm's expr or filter's pred (or use E.* / Pred.*)`,
  );
}

function token<T extends object>(value: T, what: string): T {
  Object.defineProperty(value, Symbol.toPrimitive, {
    value: () => notANumber(what),
  });
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
  KEYS.map((k) => [k.name, token({ [TOKEN]: "key", info: k } as KeyValue, `Key.${k.name}`)]),
  "key",
);
export const P: ParamTable = table(
  PARAMS.map((p) => [p.name, token({ [TOKEN]: "param", info: p } as ParamValue, `P.${p.name}`)]),
  "param",
);
export const EP: EndpointTable = table(
  [...new Set(ENDPOINTS.map((e) => e.kind))].map((kind) => [
    kind,
    table(
      ENDPOINTS.filter((e) => e.kind === kind).map((e) => [
        e.name,
        token({ [TOKEN]: "endpoint", id: e.id, name: e.name, kind: e.kind } as EndpointValue, `EP.${kind}.${e.name}`),
      ]),
      `${kind} endpoint`,
    ),
  ]),
  "endpoint kind",
);

export function asKey(v: unknown): KeyInfo | undefined {
  return typeof v === "object" && v !== null && (v as any)[TOKEN] === "key" ? (v as KeyValue).info : undefined;
}
export function asParam(v: unknown): ParamInfo | undefined {
  return typeof v === "object" && v !== null && (v as any)[TOKEN] === "param" ? (v as ParamValue).info : undefined;
}
export function asEndpoint(v: unknown): EndpointValue | undefined {
  return typeof v === "object" && v !== null && (v as any)[TOKEN] === "endpoint" ? (v as EndpointValue) : undefined;
}
