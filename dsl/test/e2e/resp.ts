// A minimal Redis client (RESP2 over TCP) for the end-to-end test: enough to
// read back the seeded demo data and delete the test's own keys.
import net from "node:net";

export type Reply = string | number | null | Reply[] | Error;

export class Resp {
  private buf = Buffer.alloc(0);
  private waiting: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];

  private constructor(private readonly sock: net.Socket) {
    sock.on("data", (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      for (;;) {
        const r = parse(this.buf, 0);
        if (!r) break;
        this.buf = this.buf.subarray(r.next);
        this.waiting.shift()?.resolve(r.value);
      }
    });
    sock.on("error", (e) => this.waiting.splice(0).forEach((w) => w.reject(e)));
  }

  static connect(url: string): Promise<Resp> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host: u.hostname || "127.0.0.1", port: Number(u.port || 6379) });
      sock.once("connect", async () => {
        const c = new Resp(sock);
        const db = u.pathname.replace("/", "");
        if (db) await c.cmd("SELECT", db);
        resolve(c);
      });
      sock.once("error", (e) =>
        reject(new Error(`Redis at ${u.host} is not reachable (${e.message}); the end-to-end test needs it (set TASKFLOW_TEST_REDIS_URL)`)),
      );
    });
  }

  cmd(...args: (string | number)[]): Promise<Reply> {
    let out = `*${args.length}\r\n`;
    for (const a of args) out += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
    return new Promise((resolve, reject) => {
      this.waiting.push({
        resolve: (r) => (r instanceof Error ? reject(r) : resolve(r)),
        reject,
      });
      this.sock.write(out);
    });
  }

  close(): void {
    this.sock.end();
  }
}

function parse(b: Buffer, at: number): { value: Reply; next: number } | undefined {
  const eol = b.indexOf("\r\n", at);
  if (eol < 0) return undefined;
  const line = b.toString("utf8", at + 1, eol);
  switch (String.fromCharCode(b[at]!)) {
    case "+":
      return { value: line, next: eol + 2 };
    case "-":
      return { value: new Error(line), next: eol + 2 };
    case ":":
      return { value: Number(line), next: eol + 2 };
    case "$": {
      const n = Number(line);
      if (n < 0) return { value: null, next: eol + 2 };
      if (b.length < eol + 2 + n + 2) return undefined;
      return { value: b.toString("utf8", eol + 2, eol + 2 + n), next: eol + 2 + n + 2 };
    }
    case "*": {
      const n = Number(line);
      if (n < 0) return { value: null, next: eol + 2 };
      const items: Reply[] = [];
      let next = eol + 2;
      for (let i = 0; i < n; i++) {
        const r = parse(b, next);
        if (!r) return undefined;
        items.push(r.value);
        next = r.next;
      }
      return { value: items, next };
    }
  }
  throw new Error(`bad RESP reply: ${line}`);
}
