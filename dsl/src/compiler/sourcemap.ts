// The smallest source-map reader the compiler needs: map a position of the
// transpiled plan back to the .plan.ts source (for errors raised at run time).

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

type Segment = [genCol: number, srcLine: number, srcCol: number];

export class SourceMap {
  private readonly lines: Segment[][] = [];

  constructor(mappings: string) {
    let srcLine = 0;
    let srcCol = 0;
    for (const line of mappings.split(";")) {
      const segs: Segment[] = [];
      let genCol = 0;
      for (const seg of line.split(",")) {
        if (seg === "") continue;
        const v = decodeVLQ(seg);
        genCol += v[0];
        if (v.length >= 4) {
          srcLine += v[2];
          srcCol += v[3];
          segs.push([genCol, srcLine, srcCol]);
        }
      }
      this.lines.push(segs);
    }
  }

  /** The 1-based source line and column of a 1-based generated position. */
  original(line: number, column: number): { line: number; column: number } | undefined {
    const segs = this.lines[line - 1];
    if (!segs || segs.length === 0) return undefined;
    let best: Segment | undefined;
    for (const s of segs) {
      if (s[0] <= column - 1) best = s;
      else break;
    }
    best ??= segs[0];
    return { line: best[1] + 1, column: best[2] + 1 };
  }
}

function decodeVLQ(s: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of s) {
    const d = B64.indexOf(ch);
    if (d < 0) throw new Error(`bad source map character ${ch}`);
    value += (d & 31) << shift;
    if (d & 32) {
      shift += 5;
    } else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}
