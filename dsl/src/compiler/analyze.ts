// The static pass over a plan's source (TypeScript compiler API): imports,
// names, aliases, and the natural expressions of vm's expr and filter's pred.
// It reports every problem with its position, and gives the transformer that
// rewrites natural syntax into calls of the runtime's E.* / Pred.* builders.
import ts from "typescript";
import { ENDPOINTS, KEYS, PARAMS } from "../generated/registry.js";

export const RUNTIME_MODULE = "@ranking-dsl/runtime";

/** What the runtime exports; a plan may import only these names. */
export const RUNTIME_EXPORTS = new Set([
  "definePlan",
  "E",
  "Pred",
  "Key",
  "P",
  "EP",
  "coalesce",
  "DslError",
  "PlanCtx",
  "PlanNode",
  "DEFAULT_FANOUT",
]);

// Names a plan may use only as the registry/builders they are.
const TABLES = new Set(["Key", "P", "EP", "E", "Pred"]);
const RESERVED = new Set([...TABLES, "coalesce", "definePlan"]);

const E_BUILDERS = new Set(["key", "param", "const", "null", "add", "sub", "mul", "coalesce", "neg"]);
const PRED_BUILDERS = new Set(["cmp", "and", "or", "not", "in", "isNull", "notNull", "regex", "const"]);
const CMP = new Set(["==", "!=", "<", "<=", ">", ">="]);

export interface Diagnostic {
  file: string;
  line: number;
  column: number;
  message: string;
}

export function formatDiagnostic(d: Diagnostic): string {
  return `${d.file}:${d.line}:${d.column}: error: ${d.message}`;
}

type Kind = "expr" | "pred";

export interface Analysis {
  diagnostics: Diagnostic[];
  /** pos:end of every expr/pred slot value, for the transformer. */
  slots: Set<string>;
  /** Where definePlan is called (for errors that have no better place). */
  defineSite?: { line: number; column: number };
}

const keyByName = new Map(KEYS.map((k) => [k.name, k]));
const paramByName = new Map(PARAMS.map((p) => [p.name, p]));

export function analyze(file: string, source: ts.SourceFile): Analysis {
  const diagnostics: Diagnostic[] = [];
  const slots = new Set<string>();
  let defineSite: Analysis["defineSite"];

  const report = (node: ts.Node, message: string) => {
    const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source));
    diagnostics.push({ file, line: line + 1, column: character + 1, message });
  };

  const isTable = (n: ts.Node, name?: string): n is ts.Identifier =>
    ts.isIdentifier(n) && TABLES.has(n.text) && (name === undefined || n.text === name);

  // Key.x / P.x / EP.kind.name: the name must exist in the registry.
  const checkTableAccess = (pa: ts.PropertyAccessExpression) => {
    const base = pa.expression as ts.Identifier;
    const name = pa.name.text;
    switch (base.text) {
      case "Key":
        if (!keyByName.has(name)) report(pa.name, `unknown key 'Key.${name}' (registry/keys.toml has: ${[...keyByName.keys()].join(", ")})`);
        break;
      case "P":
        if (!paramByName.has(name)) report(pa.name, `unknown param 'P.${name}' (registry/params.toml has: ${[...paramByName.keys()].join(", ")})`);
        break;
      case "EP": {
        const kinds = [...new Set(ENDPOINTS.map((e) => e.kind))];
        if (!kinds.includes(name as never)) {
          report(pa.name, `unknown endpoint kind 'EP.${name}' (known: ${kinds.join(", ")})`);
          break;
        }
        const outer = pa.parent;
        if (ts.isPropertyAccessExpression(outer) && outer.expression === pa) {
          const ep = outer.name.text;
          if (!ENDPOINTS.some((e) => e.kind === name && e.name === ep)) {
            report(outer.name, `unknown endpoint 'EP.${name}.${ep}' (known: ${ENDPOINTS.filter((e) => e.kind === name).map((e) => e.name).join(", ")})`);
          }
        } else {
          report(pa, `EP.${name} must be followed by an endpoint name, e.g. EP.redis.redis_default`);
        }
        break;
      }
      case "E":
        if (!E_BUILDERS.has(name)) report(pa.name, `unknown builder 'E.${name}' (known: ${[...E_BUILDERS].join(", ")})`);
        break;
      case "Pred":
        if (!PRED_BUILDERS.has(name)) report(pa.name, `unknown builder 'Pred.${name}' (known: ${[...PRED_BUILDERS].join(", ")})`);
        break;
    }
  };

  // Parentheses and type-only wrappers (`as`, `satisfies`, `!`) do not change a value.
  const unparen = (n: ts.Expression): ts.Expression => {
    while (isWrapper(n)) n = n.expression;
    return n;
  };

  const describeKind = (k: Kind) => (k === "expr" ? "an expression (a number)" : "a predicate (a comparison)");

  // The kind of a natural expression; reports what is not allowed in one.
  const natural = (node: ts.Expression, want: Kind | undefined): Kind | undefined => {
    const got = naturalKind(node);
    if (got !== undefined && want !== undefined && got !== want) {
      report(node, `expected ${describeKind(want)} here, found ${describeKind(got)}`);
    }
    return got;
  };

  const numericKey = (pa: ts.PropertyAccessExpression) => {
    if ((pa.expression as ts.Identifier).text === "Key") {
      const k = keyByName.get(pa.name.text);
      if (k && k.type !== "int" && k.type !== "float") {
        report(pa, `Key.${k.name} is a ${k.type} key; expressions read only int and float keys (for strings: Pred.in, Pred.regex, Pred.isNull, Pred.notNull)`);
      }
    } else {
      const p = paramByName.get(pa.name.text);
      if (p && p.type !== "int" && p.type !== "float") {
        report(pa, `P.${p.name} is a ${p.type} param; expressions read only int and float params`);
      }
    }
  };

  const isRef = (n: ts.Expression, table: "Key" | "P"): n is ts.PropertyAccessExpression =>
    ts.isPropertyAccessExpression(n) && isTable(n.expression, table);

  const stringLit = (n: ts.Expression | undefined): n is ts.StringLiteral | ts.NoSubstitutionTemplateLiteral =>
    n !== undefined && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n));

  const isNumberLiteral = (n: ts.Expression): boolean => {
    n = unparen(n);
    if (ts.isNumericLiteral(n)) return true;
    return ts.isPrefixUnaryExpression(n) && n.operator === ts.SyntaxKind.MinusToken && ts.isNumericLiteral(unparen(n.operand));
  };

  const argCount = (call: ts.CallExpression, name: string, min: number, max: number) => {
    const n = call.arguments.length;
    if (n < min || n > max) {
      report(call, `${name} takes ${min === max ? min : max === Infinity ? `at least ${min}` : `${min} to ${max}`} argument${max === 1 ? "" : "s"}, got ${n}`);
      return false;
    }
    return true;
  };

  // Key.x in a position that may read any key (regex, in, is-null tests).
  const anyKeyOrExpr = (n: ts.Expression) => {
    const u = unparen(n);
    if (isRef(u, "Key")) {
      checkTableAccess(u);
      return;
    }
    natural(n, "expr");
  };

  // `Key.country == null` (or `!=`, or E.null()): a string key may be
  // compared with a literal null — the is-null test — and only that way.
  function stringKeyNullTest(a: ts.Expression, b: ts.Expression): boolean {
    const [l, r] = [unparen(a), unparen(b)];
    const isNull = (x: ts.Expression) =>
      x.kind === ts.SyntaxKind.NullKeyword ||
      (ts.isCallExpression(x) && x.arguments.length === 0 && ts.isPropertyAccessExpression(x.expression) && isTable(x.expression.expression, "E") && x.expression.name.text === "null");
    const keySide = isNull(l) ? r : isNull(r) ? l : undefined;
    if (!keySide || !isRef(keySide, "Key") || keyByName.get(keySide.name.text)?.type !== "string") return false;
    checkTableAccess(keySide);
    return true;
  }

  function naturalKind(node: ts.Expression): Kind | undefined {
    const n = node;
    if (isWrapper(n)) return naturalKind(n.expression);
    if (ts.isNumericLiteral(n) || n.kind === ts.SyntaxKind.NullKeyword) return "expr";
    if (n.kind === ts.SyntaxKind.TrueKeyword || n.kind === ts.SyntaxKind.FalseKeyword) return "pred";
    if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateExpression(n)) {
      report(n, "strings are not values of expressions; test a string key with Pred.in(Key.country, [...]) or Pred.regex(Key.title, ...)");
      return undefined;
    }
    if (ts.isPrefixUnaryExpression(n)) {
      switch (n.operator) {
        case ts.SyntaxKind.MinusToken:
        case ts.SyntaxKind.PlusToken:
          natural(n.operand, "expr");
          return "expr";
        case ts.SyntaxKind.ExclamationToken:
          natural(n.operand, "pred");
          return "pred";
        default:
          report(n, `the operator ${ts.tokenToString(n.operator)} is not supported in expressions`);
          return undefined;
      }
    }
    if (ts.isBinaryExpression(n)) {
      const op = n.operatorToken.kind;
      switch (op) {
        case ts.SyntaxKind.PlusToken:
        case ts.SyntaxKind.MinusToken:
        case ts.SyntaxKind.AsteriskToken:
        case ts.SyntaxKind.QuestionQuestionToken:
          natural(n.left, "expr");
          natural(n.right, "expr");
          return "expr";
        case ts.SyntaxKind.SlashToken:
          natural(n.left, "expr");
          report(n.operatorToken, "division is not supported (the plan IR has no division); multiply by a constant instead, e.g. x * 0.5");
          natural(n.right, "expr");
          return "expr";
        case ts.SyntaxKind.LessThanToken:
        case ts.SyntaxKind.LessThanEqualsToken:
        case ts.SyntaxKind.GreaterThanToken:
        case ts.SyntaxKind.GreaterThanEqualsToken:
        case ts.SyntaxKind.EqualsEqualsToken:
        case ts.SyntaxKind.ExclamationEqualsToken:
        case ts.SyntaxKind.EqualsEqualsEqualsToken:
        case ts.SyntaxKind.ExclamationEqualsEqualsToken: {
          // One message for `Key.country == "US"`, not one per side.
          const str = [n.left, n.right].map(unparen).find((x) => stringLit(x) || ts.isTemplateExpression(x));
          if (str) {
            report(str, "strings are not values of expressions; test a string key with Pred.in(Key.country, [...]) or Pred.regex(Key.title, ...)");
            return "pred";
          }
          const equality = op !== ts.SyntaxKind.LessThanToken && op !== ts.SyntaxKind.LessThanEqualsToken &&
            op !== ts.SyntaxKind.GreaterThanToken && op !== ts.SyntaxKind.GreaterThanEqualsToken;
          if (equality && stringKeyNullTest(n.left, n.right)) return "pred";
          natural(n.left, "expr");
          natural(n.right, "expr");
          return "pred";
        }
        case ts.SyntaxKind.AmpersandAmpersandToken:
        case ts.SyntaxKind.BarBarToken:
          natural(n.left, "pred");
          natural(n.right, "pred");
          return "pred";
        default:
          report(n.operatorToken, `the operator ${ts.tokenToString(op)} is not supported in expressions (use + - * ?? comparisons && || !)`);
          return undefined;
      }
    }
    if (ts.isPropertyAccessExpression(n) && ts.isIdentifier(n.expression) && (n.expression.text === "Key" || n.expression.text === "P")) {
      checkTableAccess(n);
      numericKey(n);
      return "expr";
    }
    if (ts.isCallExpression(n)) return naturalCall(n);
    if (ts.isIdentifier(n)) {
      if (n.text === "undefined") {
        report(n, "undefined is not a value of expressions; use null");
        return undefined;
      }
      if (RESERVED.has(n.text)) {
        report(n, `${n.text} must be used as ${n.text === "coalesce" ? "coalesce(a, b)" : `${n.text}.<name>`} inside an expression`);
        return undefined;
      }
      report(
        n,
        `'${n.text}' is an alias: vm's expr and filter's pred are written inline with Key.*, P.*, numbers, coalesce(...), E.* and Pred.* (aliases are not supported)`,
      );
      return undefined;
    }
    report(n, `unsupported syntax in an expression: ${ts.SyntaxKind[n.kind]}`);
    return undefined;
  }

  function naturalCall(call: ts.CallExpression): Kind | undefined {
    const callee = call.expression;
    if (ts.isIdentifier(callee) && callee.text === "coalesce") {
      if (argCount(call, "coalesce", 2, Infinity)) for (const a of call.arguments) natural(a, "expr");
      return "expr";
    }
    if (ts.isPropertyAccessExpression(callee) && isTable(callee.expression, "E")) {
      checkTableAccess(callee);
      const name = callee.name.text;
      const args = call.arguments;
      switch (name) {
        case "key":
          if (argCount(call, "E.key", 1, 1)) {
            if (!isRef(unparen(args[0]!), "Key")) report(args[0]!, "E.key takes a Key.* name");
            else natural(args[0]!, "expr");
          }
          break;
        case "param":
          if (argCount(call, "E.param", 1, 1)) {
            if (!isRef(unparen(args[0]!), "P")) report(args[0]!, "E.param takes a P.* name");
            else natural(args[0]!, "expr");
          }
          break;
        case "const":
          if (argCount(call, "E.const", 1, 1) && !isNumberLiteral(args[0]!)) report(args[0]!, "E.const takes a number literal");
          break;
        case "null":
          argCount(call, "E.null", 0, 0);
          break;
        case "neg":
          if (argCount(call, "E.neg", 1, 1)) natural(args[0]!, "expr");
          break;
        default:
          if (argCount(call, `E.${name}`, 2, 2)) for (const a of args) natural(a, "expr");
      }
      return "expr";
    }
    if (ts.isPropertyAccessExpression(callee) && isTable(callee.expression, "Pred")) {
      checkTableAccess(callee);
      const name = callee.name.text;
      const args = call.arguments;
      switch (name) {
        case "cmp":
          if (argCount(call, "Pred.cmp", 3, 3)) {
            const op = args[0]!;
            if (!stringLit(op) || !CMP.has(op.text)) report(op, `Pred.cmp's first argument is one of ${[...CMP].map((c) => JSON.stringify(c)).join(" ")}`);
            if (stringLit(op) && (op.text === "==" || op.text === "!=") && stringKeyNullTest(args[1]!, args[2]!)) break;
            natural(args[1]!, "expr");
            natural(args[2]!, "expr");
          }
          break;
        case "and":
        case "or":
          if (argCount(call, `Pred.${name}`, 2, Infinity)) for (const a of args) natural(a, "pred");
          break;
        case "not":
          if (argCount(call, "Pred.not", 1, 1)) natural(args[0]!, "pred");
          break;
        case "in": {
          if (!argCount(call, "Pred.in", 2, 2)) break;
          anyKeyOrExpr(args[0]!);
          const list = unparen(args[1]!);
          if (!ts.isArrayLiteralExpression(list) || list.elements.length === 0) {
            report(args[1]!, "Pred.in's list is a non-empty array literal of numbers or of strings");
            break;
          }
          const nums = list.elements.every((e) => isNumberLiteral(e));
          const strs = list.elements.every((e) => stringLit(e));
          if (!nums && !strs) report(list, "Pred.in's list holds only number literals or only string literals");
          break;
        }
        case "isNull":
        case "notNull":
          if (argCount(call, `Pred.${name}`, 1, 1)) anyKeyOrExpr(args[0]!);
          break;
        case "regex": {
          if (!argCount(call, "Pred.regex", 2, 3)) break;
          const key = unparen(args[0]!);
          if (!isRef(key, "Key")) report(args[0]!, "Pred.regex's first argument is a Key.* name");
          else checkTableAccess(key);
          const pat = unparen(args[1]!);
          if (isRef(pat, "P")) checkTableAccess(pat);
          else if (!stringLit(pat)) report(args[1]!, "Pred.regex's pattern is a string literal or a P.* name");
          if (args[2] && (!stringLit(args[2]) || (args[2].text !== "" && args[2].text !== "i"))) {
            report(args[2], 'Pred.regex\'s flags are "" or "i"');
          }
          break;
        }
        case "const":
          if (argCount(call, "Pred.const", 1, 1)) {
            const k = unparen(args[0]!).kind;
            if (k !== ts.SyntaxKind.TrueKeyword && k !== ts.SyntaxKind.FalseKeyword) report(args[0]!, "Pred.const takes true or false");
          }
          break;
      }
      return "pred";
    }
    report(call, "only coalesce(...), E.* and Pred.* may be called inside an expression");
    return undefined;
  }

  // vm({..., expr}) / filter({..., pred}): the slot's value is a natural expression.
  const slotOf = (prop: ts.ObjectLiteralElementLike): Kind | undefined => {
    const obj = prop.parent;
    if (!ts.isObjectLiteralExpression(obj)) return undefined;
    const call = obj.parent;
    if (!ts.isCallExpression(call) || call.arguments[0] !== obj) return undefined;
    if (!ts.isPropertyAccessExpression(call.expression)) return undefined;
    const method = call.expression.name.text;
    const name = prop.name && (ts.isIdentifier(prop.name) || ts.isStringLiteral(prop.name)) ? prop.name.text : undefined;
    if (method === "vm" && name === "expr") return "expr";
    if (method === "filter" && name === "pred") return "pred";
    return undefined;
  };

  // Is this Key.x / P.x (or call) used as an operand outside a slot?
  const operandOutsideSlot = (node: ts.Node): boolean => {
    let p = node.parent;
    while (p && isWrapper(p)) p = p.parent;
    if (!p) return false;
    if (ts.isBinaryExpression(p)) {
      const k = p.operatorToken.kind;
      return k !== ts.SyntaxKind.EqualsToken && k !== ts.SyntaxKind.CommaToken;
    }
    return ts.isPrefixUnaryExpression(p) || ts.isPostfixUnaryExpression(p) || ts.isTemplateSpan(p);
  };

  const isDeclarationName = (id: ts.Identifier): boolean => {
    const p = id.parent;
    return (
      (ts.isVariableDeclaration(p) ||
        ts.isParameter(p) ||
        ts.isFunctionDeclaration(p) ||
        ts.isFunctionExpression(p) ||
        ts.isClassDeclaration(p) ||
        ts.isClassExpression(p) ||
        ts.isBindingElement(p) ||
        ts.isEnumDeclaration(p) ||
        ts.isImportEqualsDeclaration(p) ||
        ts.isNamespaceImport(p) ||
        ts.isImportClause(p)) &&
      (p as { name?: ts.Node }).name === id
    );
  };

  const checkImport = (imp: ts.ImportDeclaration) => {
    const spec = imp.moduleSpecifier;
    if (!ts.isStringLiteral(spec) || spec.text !== RUNTIME_MODULE) {
      report(spec, `a plan may import only "${RUNTIME_MODULE}" (found ${spec.getText(source)})`);
      return;
    }
    const clause = imp.importClause;
    if (!clause) return;
    if (clause.name) report(clause.name, `"${RUNTIME_MODULE}" has no default export; import names: import { definePlan } from "${RUNTIME_MODULE}"`);
    const nb = clause.namedBindings;
    if (nb && ts.isNamespaceImport(nb)) {
      report(nb, `import the names you use (import { definePlan, E, Pred } from "${RUNTIME_MODULE}"); a namespace import is an alias`);
    } else if (nb) {
      for (const el of nb.elements) {
        const imported = (el.propertyName ?? el.name).text;
        if (!RUNTIME_EXPORTS.has(imported)) report(el, `"${RUNTIME_MODULE}" does not export '${imported}'`);
        else if (el.propertyName && el.propertyName.text !== el.name.text) {
          report(el, `'${imported}' is imported as '${el.name.text}': aliases are not supported`);
        }
      }
    }
  };

  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      checkImport(node);
      return;
    }
    if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      report(node.moduleSpecifier, `a plan may not re-export from another module`);
      return;
    }
    if (ts.isImportEqualsDeclaration(node)) {
      report(node, "import = require(...) is not available in a plan");
      return;
    }
    if (ts.isMetaProperty(node) && node.keywordToken === ts.SyntaxKind.ImportKeyword) {
      report(node, "import.meta is not available in a plan");
      return;
    }
    if (ts.isCallExpression(node)) {
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        report(node, "dynamic import() is not available in a plan (no IO)");
        return;
      }
      if (ts.isIdentifier(node.expression) && node.expression.text === "require") {
        report(node, "require() is not available in a plan (no IO); import from " + JSON.stringify(RUNTIME_MODULE));
        return;
      }
      if (ts.isIdentifier(node.expression) && node.expression.text === "definePlan" && !defineSite) {
        const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source));
        defineSite = { line: line + 1, column: character + 1 };
      }
      const callee = node.expression;
      if (
        (ts.isIdentifier(callee) && callee.text === "coalesce") ||
        (ts.isPropertyAccessExpression(callee) && (isTable(callee.expression, "E") || isTable(callee.expression, "Pred")))
      ) {
        report(node, `${callee.getText(source)}(...) builds an expression: write it inline as vm's expr or filter's pred`);
        return;
      }
    }
    if (ts.isPropertyAssignment(node)) {
      const kind = slotOf(node);
      if (kind) {
        slots.add(`${node.initializer.pos}:${node.initializer.end}`);
        natural(node.initializer, kind);
        if (node.name && ts.isComputedPropertyName(node.name)) visit(node.name);
        return;
      }
    }
    if (ts.isShorthandPropertyAssignment(node) && slotOf(node)) {
      report(node, `'${node.name.text}' is an alias: write the ${node.name.text === "expr" ? "expression" : "predicate"} inline (${node.name.text}: ...)`);
      return;
    }
    if (ts.isPropertyAccessExpression(node) && isTable(node.expression)) {
      checkTableAccess(node);
      if ((node.expression.text === "Key" || node.expression.text === "P") && operandOutsideSlot(node)) {
        report(node, `${node.getText(source)} is used in an expression outside vm's expr / filter's pred; natural expressions are written inline there`);
      }
      return;
    }
    if (ts.isTypeNode(node)) return;
    if (ts.isIdentifier(node)) {
      if (node.text.startsWith("__dsl")) report(node, `names starting with __dsl are reserved for the compiler`);
      if (RESERVED.has(node.text)) {
        const p = node.parent;
        if (isDeclarationName(node)) {
          report(node, `'${node.text}' is the runtime's name; a plan may not declare its own ${node.text}`);
        } else if (ts.isShorthandPropertyAssignment(p)) {
          report(node, `'${node.text}' would be aliased here; aliases are not supported`);
        } else if (
          (ts.isPropertyAccessExpression(p) && p.name === node) ||
          (ts.isPropertyAssignment(p) && p.name === node) ||
          ((ts.isMethodDeclaration(p) || ts.isPropertyDeclaration(p) || ts.isGetAccessor(p) || ts.isSetAccessor(p)) && p.name === node) ||
          ts.isImportSpecifier(p) ||
          ts.isQualifiedName(p) ||
          ts.isLabeledStatement(p)
        ) {
          // a property name, not the runtime's value
        } else if (ts.isCallExpression(p) && p.expression === node && node.text === "definePlan") {
          // definePlan(...)
        } else {
          report(
            node,
            `${node.text} can only be used as ${node.text === "coalesce" ? "coalesce(a, b) in an expression" : node.text === "definePlan" ? "definePlan({...})" : `${node.text}.<name>`}: aliases are not supported`,
          );
        }
      }
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  diagnostics.sort((a, b) => a.line - b.line || a.column - b.column);
  return { diagnostics, slots, defineSite };
}

type Wrapper = ts.ParenthesizedExpression | ts.AsExpression | ts.SatisfiesExpression | ts.NonNullExpression | ts.TypeAssertion;

function isWrapper(n: ts.Node): n is Wrapper {
  return (
    ts.isParenthesizedExpression(n) || ts.isAsExpression(n) || ts.isSatisfiesExpression(n) || ts.isNonNullExpression(n) || ts.isTypeAssertionExpression(n)
  );
}

/** Rewrites the natural syntax of every expr/pred slot into E.* / Pred.* calls. */
export function naturalTransformer(slots: Set<string>): ts.TransformerFactory<ts.SourceFile> {
  return (context) => {
    const f = context.factory;
    const call = (table: "__dsl_E" | "__dsl_Pred", name: string, args: ts.Expression[], orig: ts.Node) => {
      const c = f.createCallExpression(f.createPropertyAccessExpression(f.createIdentifier(table), name), undefined, args);
      ts.setTextRange(c, orig);
      ts.setSourceMapRange(c, orig);
      return c;
    };
    const rewrite = (node: ts.Node): ts.Node => {
      if (ts.isBinaryExpression(node)) {
        const l = rewrite(node.left) as ts.Expression;
        const r = rewrite(node.right) as ts.Expression;
        switch (node.operatorToken.kind) {
          case ts.SyntaxKind.PlusToken:
            return call("__dsl_E", "add", [l, r], node);
          case ts.SyntaxKind.MinusToken:
            return call("__dsl_E", "sub", [l, r], node);
          case ts.SyntaxKind.AsteriskToken:
            return call("__dsl_E", "mul", [l, r], node);
          case ts.SyntaxKind.QuestionQuestionToken:
            return call("__dsl_E", "coalesce", [l, r], node);
          case ts.SyntaxKind.AmpersandAmpersandToken:
            return call("__dsl_Pred", "and", [l, r], node);
          case ts.SyntaxKind.BarBarToken:
            return call("__dsl_Pred", "or", [l, r], node);
        }
        const op = {
          [ts.SyntaxKind.LessThanToken]: "<",
          [ts.SyntaxKind.LessThanEqualsToken]: "<=",
          [ts.SyntaxKind.GreaterThanToken]: ">",
          [ts.SyntaxKind.GreaterThanEqualsToken]: ">=",
          [ts.SyntaxKind.EqualsEqualsToken]: "==",
          [ts.SyntaxKind.EqualsEqualsEqualsToken]: "==",
          [ts.SyntaxKind.ExclamationEqualsToken]: "!=",
          [ts.SyntaxKind.ExclamationEqualsEqualsToken]: "!=",
        }[node.operatorToken.kind as number];
        if (op) return call("__dsl_Pred", "cmp", [f.createStringLiteral(op), l, r], node);
        return node;
      }
      if (ts.isPrefixUnaryExpression(node)) {
        if (node.operator === ts.SyntaxKind.ExclamationToken) return call("__dsl_Pred", "not", [rewrite(node.operand) as ts.Expression], node);
        if (node.operator === ts.SyntaxKind.MinusToken && !ts.isNumericLiteral(node.operand)) {
          return call("__dsl_E", "neg", [rewrite(node.operand) as ts.Expression], node);
        }
        if (node.operator === ts.SyntaxKind.PlusToken) return rewrite(node.operand);
        return node;
      }
      return ts.visitEachChild(node, rewrite, context);
    };
    const visit = (node: ts.Node): ts.Node => {
      if (slots.has(`${node.pos}:${node.end}`) && ts.isExpression(node)) return rewrite(node);
      return ts.visitEachChild(node, visit, context);
    };
    return (sf) => ts.visitNode(sf, visit) as ts.SourceFile;
  };
}
