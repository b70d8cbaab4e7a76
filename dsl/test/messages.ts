// Every message the compiler and the runtime can produce, read from their
// sources (src/runtime, src/compiler) with the TypeScript compiler API: the
// first argument of new DslError / Error / TypeError / CompileError-style
// records, siteError, report (the static pass), fail (the host check), usage
// and notANumber, the `message:` of an object literal, the refusals (refuse)
// and thrown Errors inside the sandbox's bootstrap text, and io.stderr lines.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";

export interface Message {
  /** file:line of the message in src/. */
  where: string;
  /** The message's literal text, `${…}` where it is computed. */
  text: string;
  /** The longest literal piece of it (its first 32 characters): what a test must mention. */
  key: string;
}

const src = resolve(import.meta.dirname, "..", "src");
const CALLEES = new Set(["DslError", "Error", "TypeError", "siteError", "report", "fail", "usage", "notANumber", "refuse", "Malformed"]);

function pieces(e: ts.Expression): string[] | undefined {
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return [e.text];
  if (ts.isTemplateExpression(e)) return [e.head.text, ...e.templateSpans.map((s) => s.literal.text)];
  if (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const l = pieces(e.left) ?? [""];
    const r = pieces(e.right) ?? [""];
    return [...l, ...r];
  }
  if (ts.isParenthesizedExpression(e)) return pieces(e.expression);
  if (ts.isConditionalExpression(e)) {
    const a = pieces(e.whenTrue);
    const b = pieces(e.whenFalse);
    return a && b ? [...a, ...b] : undefined;
  }
  return undefined;
}

function record(out: Message[], where: string, parts: string[] | undefined): void {
  if (!parts) return;
  const longest = parts.map((p) => p.replace(/^[\s"':]+|[\s"':]+$/g, "")).sort((a, b) => b.length - a.length)[0] ?? "";
  const key = longest.slice(0, 32).trim();
  if (key.length < 4) return; // a message made entirely elsewhere
  out.push({ where, text: parts.join("${…}"), key });
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? (d.name === "generated" ? [] : files(join(dir, d.name))) : d.name.endsWith(".ts") ? [join(dir, d.name)] : [],
  );
}

export function sourceMessages(): Message[] {
  const out: Message[] = [];
  for (const file of files(src).sort()) {
    const text = readFileSync(file, "utf8");
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const rel = file.slice(src.length + 1);
    const where = (n: ts.Node) => `${rel}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
    const visit = (n: ts.Node): void => {
      if ((ts.isCallExpression(n) || ts.isNewExpression(n)) && n.arguments && n.arguments.length > 0) {
        const callee = ts.isPropertyAccessExpression(n.expression) ? n.expression.name.text : ts.isIdentifier(n.expression) ? n.expression.text : "";
        if (CALLEES.has(callee)) record(out, where(n), pieces(n.arguments[callee === "report" ? 1 : 0]!));
        if (callee === "stderr" && n.arguments[0]) record(out, where(n), pieces(n.arguments[0]));
      }
      if (ts.isPropertyAssignment(n) && ts.isIdentifier(n.name) && n.name.text === "message") record(out, where(n), pieces(n.initializer));
      // The sandbox's bootstrap is JavaScript inside a template literal.
      if (ts.isTemplateExpression(n) || ts.isNoSubstitutionTemplateLiteral(n)) {
        const body = ts.isTemplateExpression(n) ? [n.head.text, ...n.templateSpans.map((s) => s.literal.text)].join("") : n.text;
        if (body.includes("use strict")) {
          for (const m of body.matchAll(/(?:new (?:Type)?Error|refuse|describe\(new Error)\((["'])((?:(?!\1).)+)\1/g)) {
            record(out, where(n), [m[2]!]);
          }
          for (const m of body.matchAll(/throw new (?:Type)?Error\((["'])((?:(?!\1).)*)\1 \+/g)) record(out, where(n), [m[2]!]);
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

/** The text of every test file (but messages.test.ts), with the escapes of string literals undone. */
export function testText(): string {
  const dir = resolve(import.meta.dirname);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".test.ts") && f !== "messages.test.ts")
    .map((f) => readFileSync(join(dir, f), "utf8"))
    .join("\n")
    .replace(/\\+(?=[^\w\s])/g, "");
}
