// Every error message the compiler and the runtime can produce is tested:
// the messages are read from src/ (test/messages.ts) and each must be
// mentioned by a test (its longest literal piece, up to 32 characters, in the
// text of test/*.test.ts). A new message without a test fails here.
import { describe, expect, it } from "vitest";
import { sourceMessages, testText } from "./messages.js";

// Messages no plan can reach, each with why; everything else needs a test.
const UNREACHABLE: Record<string, string> = {
  "dslc: cannot find the @ranking-d": "a broken install (no package.json of the package above the compiler)",
  "runtime module not found": "the runtime's own imports between its modules",
  "the plan's output holds a number": "the sandbox's encoder: the runtime makes the output and checks its numbers",
  "the plan's output holds a": "the sandbox's encoder: the runtime makes the output from primitives, arrays and plain objects",
  "the plan's output holds an array": "the sandbox's encoder: the runtime makes dense arrays",
  "the plan's output holds an objec": "the sandbox's encoder: the runtime makes plain objects",
  "the plan's output holds a symbol": "the sandbox's encoder: the runtime uses string keys",
  "the plan's output holds a getter": "the sandbox's encoder: the runtime makes data properties",
  "the plan stopped the sandbox wit": "__dsl_run turns every thrown value into text inside the context; only the time limit's error reaches the host",
  "registry/tasks.toml declares no": "the runtime asks only for params the catalog declares (registry.test.ts checks the catalog)",
  "the compiler does not know the": "only a new param type in registry/tasks.toml reaches it",
};

describe("error messages", () => {
  const messages = sourceMessages();
  const tests = testText();

  it("TheScanFindsTheMessages", () => {
    // The scan itself must work: these are known messages of each kind.
    const keys = messages.map((m) => m.key);
    for (const k of ["take: expected an options object".slice(6), "vm: expr is required", "division is not supported (the", "pred_table entry", "the sandbox returned a non-strin", "Math.random", "__dsl_run may run once"]) {
      expect(keys.some((x) => x.includes(k) || k.includes(x)), k).toBe(true);
    }
    expect(messages.length).toBeGreaterThan(150);
  });

  const unreachable = (key: string) => Object.keys(UNREACHABLE).some((k) => key.startsWith(k));

  it("EveryMessageIsTested", () => {
    const untested = messages.filter((m) => !tests.includes(m.key) && !unreachable(m.key)).map((m) => `${m.where}: ${m.text}`);
    expect(untested).toEqual([]);
  });

  it("UnreachableListIsCurrent", () => {
    // A message that is gone, or now tested, leaves this list.
    for (const k of Object.keys(UNREACHABLE)) {
      const ms = messages.filter((m) => m.key.startsWith(k));
      expect(ms.length, k).toBeGreaterThan(0);
      expect(ms.filter((m) => tests.includes(m.key)).map((m) => m.text), k).toEqual([]);
    }
  });
});
